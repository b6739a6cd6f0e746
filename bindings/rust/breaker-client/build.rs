//! Links libbreaker_client.so: from BREAKER_CLIENT_LIB_DIR, or from the repository's Bazel
//! output (`bazel build //client:breaker_client_shared`). The directory is also written as
//! the binaries' rpath, so that tests and examples find the library where it was linked; a
//! node that installs the library elsewhere sets its own rpath or LD_LIBRARY_PATH.
//!
//! Outside the repository (the crate as libbreaker-client-dev installs it, under
//! /usr/share/cargo/registry), the installed library, as `pkg-config breaker-client` names
//! it: its directory is the loader's own, so no rpath is written.
//!
//! Cargo passes that rpath to this crate's own binaries only. A dependent's binary gets the
//! directory as `DEP_BREAKER_CLIENT_LIB_DIR` in its build script (this crate `links`
//! "breaker_client" and publishes `lib_dir`), and sets its own rpath from it (docs/bindings.md).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=BREAKER_CLIENT_LIB_DIR");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repository_output = manifest_dir.join("../../../bazel-bin/client");
    let dir = match env::var_os("BREAKER_CLIENT_LIB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None if !manifest_dir.join("../../../WORKSPACE").exists() => return link_installed(),
        None => repository_output,
    };
    let library = dir.join("libbreaker_client.so");
    if !library.exists() {
        panic!(
            "{} does not exist: run `bazel build //client:breaker_client_shared`, or set \
             BREAKER_CLIENT_LIB_DIR to the directory that holds libbreaker_client.so",
            library.display()
        );
    }
    println!("cargo:rerun-if-changed={}", library.display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=breaker_client");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
}

/// Links the installed library with the flags `pkg-config --libs breaker-client` gives.
fn link_installed() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let output = Command::new("pkg-config")
        .args(["--libs", "breaker-client"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run pkg-config ({e}): install pkg-config and libbreaker-client-dev, or set BREAKER_CLIENT_LIB_DIR"));
    if !output.status.success() {
        panic!(
            "pkg-config does not know breaker-client ({}): install libbreaker-client-dev, or set \
             BREAKER_CLIENT_LIB_DIR to the directory that holds libbreaker_client.so",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let libs = String::from_utf8(output.stdout).expect("pkg-config prints text");
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:lib_dir={dir}");
        } else if let Some(name) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={name}");
        } else {
            println!("cargo:rustc-link-arg={flag}");
        }
    }
}
