"""The project's GoogleTest tests."""

# What every test links: its main (glog, and the sanitizers' settings for the prebuilt
# libraries), the absl::Status matchers, Abseil and GoogleTest.
_COMMON_DEPS = [
    "//tests/support:test_main",
    "//tests/support:status_matchers",
    "//third_party:absl",
    "//third_party:gtest",
]

def breaker_cc_test(name, srcs = None, deps = [], **kwargs):
    """A cc_test of `name`.cc (unless `srcs` says otherwise) with the project's test main.

    Args:
      name: the test's name.
      srcs: its sources; default [name + ".cc"].
      deps: what it tests and uses besides _COMMON_DEPS.
      **kwargs: any other cc_test attribute (size, data, args, tags, ...).
    """
    native.cc_test(
        name = name,
        srcs = srcs if srcs != None else [name + ".cc"],
        deps = deps + [dep for dep in _COMMON_DEPS if dep not in deps],
        **kwargs
    )

def fleet_process_test(name, data = [], deps = [], **kwargs):
    """A breaker_cc_test that runs the breakerd binary and example_node processes (fleet_harness).

    Args:
      name: the test's name.
      data: what it reads besides the two binaries.
      deps: what it uses besides the fleet harness and the subprocess support.
      **kwargs: any other cc_test attribute (size, args, tags, ...).
    """
    breaker_cc_test(
        name = name,
        data = ["//examples:example_node", "//service:breakerd"] + data,
        deps = ["//tests/support:fleet_harness", "//tests/support:subprocess"] + deps,
        **kwargs
    )

def sidecar_process_test(name, data = [], deps = [], **kwargs):
    """A breaker_cc_test that runs breaker-sidecar processes (sidecar_process.h).

    Args:
      name: the test's name.
      data: what it reads besides the sidecar's binary.
      deps: what it uses besides the sidecar process support.
      **kwargs: any other cc_test attribute (size, args, tags, ...).
    """
    breaker_cc_test(
        name = name,
        data = ["//sidecar:breaker-sidecar"] + data,
        deps = ["//tests/support:sidecar_process", "//tests/support:subprocess"] + deps,
        **kwargs
    )
