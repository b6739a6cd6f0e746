"""A fuzz target's two faces: libFuzzer's binary and the replay test over its seed corpus."""

def fuzzer(name, target, corpus, test_args = []):
    """Declares `name` and `name`_test for the cc_library `target` (alwayslink).

    `name` links libFuzzer's main() under --config=fuzz (tools/fuzz.sh), the replay driver's
    otherwise. `name`_test replays the seed corpus in `corpus` (a directory of this package),
    then deterministic mutations of it.

    Args:
      name: the binary's name.
      target: the fuzz target's library, which defines LLVMFuzzerTestOneInput.
      corpus: the seed corpus directory, relative to the package.
      test_args: replay-driver flags put before the corpus directory.
    """
    native.cc_binary(
        name = name,
        testonly = True,
        linkopts = select({
            "//tests/support:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = [target] + select({
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
            target,
            "//tests/support:fuzz_replay_main",
        ],
    )
