//! Links libbreaker_client.so: from BREAKER_CLIENT_LIB_DIR, or from the repository's Bazel
//! output (`bazel build //client:breaker_client_shared`). The directory is also written as
//! the binaries' rpath, so that tests and examples find the library where it was linked; a
//! node that installs the library elsewhere sets its own rpath or LD_LIBRARY_PATH.
//!
//! Cargo passes that rpath to this crate's own binaries only. A dependent's binary gets the
//! directory as `DEP_BREAKER_CLIENT_LIB_DIR` in its build script (this crate `links`
//! "breaker_client" and publishes `lib_dir`), and sets its own rpath from it (docs/bindings.md).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=BREAKER_CLIENT_LIB_DIR");
    let dir = match env::var_os("BREAKER_CLIENT_LIB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("../../../bazel-bin/client"),
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
