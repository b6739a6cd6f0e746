"""A fuzz target's two faces: libFuzzer's binary and the replay test over its seed corpus."""

def fuzzer(name, srcs, deps, corpus, test_args = []):
    """Declares `name` and `name`_test for the fuzz target in `srcs`.

    The target (`srcs`, which define LLVMFuzzerTestOneInput, with `deps`) is the library
    `name`_target. `name` links libFuzzer's main() under --config=fuzz (tools/fuzz.sh), the
    replay driver's otherwise. `name`_test replays the seed corpus in `corpus` (a directory of
    this package), then deterministic mutations of it.

    Args:
      name: the binary's name.
      srcs: the fuzz target's sources.
      deps: what they use.
      corpus: the seed corpus directory, relative to the package.
      test_args: replay-driver flags put before the corpus directory.
    """
    target = name + "_target"
    native.cc_library(
        name = target,
        testonly = True,
        srcs = srcs,
        deps = deps,
        # LLVMFuzzerTestOneInput is called only by the main() linked beside it.
        alwayslink = True,
    )
    native.cc_binary(
        name = name,
        testonly = True,
        linkopts = select({
            "//tests/support:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = [":" + target] + select({
            "//tests/support:fuzzing": [],
            "//conditions:default": ["//tests/support:fuzz_replay_main"],
        }),
    )
    native.cc_test(
        name = name + "_test",
        size = "small",
        args = test_args + [native.package_name() + "/" + corpus],
        data = native.glob([corpus + "/*"]),
        deps = [
            ":" + target,
            "//tests/support:fuzz_replay_main",
        ],
    )
