"""Protobuf and gRPC C++ code generation with Debian's protoc and grpc_cpp_plugin.

Bazel 4's native proto rules want to build protoc from source; this project uses the
system's instead, so nothing is downloaded.
"""

_PROTOC = "/usr/bin/protoc"
_GRPC_PLUGIN = "/usr/bin/grpc_cpp_plugin"

def _stem(src):
    return src[:-len(".proto")]

def _protoc(args, srcs):
    # Import paths are relative to the package: `import "breaker/v1/x.proto"`.
    return "%s -I%s %s %s" % (
        _PROTOC,
        native.package_name(),
        args,
        " ".join(["$(location %s)" % s for s in srcs]),
    )

def breaker_proto_library(name, srcs, deps = [], grpc = False, visibility = None):
    """Declares `<name>_proto`, `<name>_descriptor_set`, `<name>_cc_proto` and, with
    grpc = True, `<name>_cc_grpc`.

    `<name>_descriptor_set` builds `<name>.protoset`: a descriptor set with source info, so
    that `grpcurl -protoset` shows the proto comments that server reflection omits.

    Args:
      name: base name; the targets are derived from it.
      srcs: .proto files, relative to this package, which is the import root.
      deps: base names of other breaker_proto_library targets whose .proto files these import.
      grpc: also generate gRPC service stubs and mocks.
      visibility: visibility of the generated targets.
    """
    proto_deps = [d + "_proto" for d in deps]
    native.filegroup(
        name = name + "_proto",
        srcs = srcs + proto_deps,
        visibility = visibility,
    )

    native.genrule(
        name = name + "_descriptor_set",
        srcs = srcs + proto_deps,
        outs = [name + ".protoset"],
        cmd = _protoc("--include_source_info --include_imports --descriptor_set_out=$@", srcs),
        visibility = visibility,
    )

    pb_hdrs = [_stem(s) + ".pb.h" for s in srcs]
    pb_srcs = [_stem(s) + ".pb.cc" for s in srcs]
    native.genrule(
        name = name + "_cc_proto_gen",
        srcs = srcs + proto_deps,
        outs = pb_hdrs + pb_srcs,
        cmd = _protoc("--cpp_out=$(GENDIR)/" + native.package_name(), srcs),
    )
    native.cc_library(
        name = name + "_cc_proto",
        srcs = pb_srcs,
        hdrs = pb_hdrs,
        includes = ["."],
        deps = [d + "_cc_proto" for d in deps] + ["//third_party:protobuf"],
        visibility = visibility,
    )

    if grpc:
        grpc_hdrs = [_stem(s) + ".grpc.pb.h" for s in srcs]
        grpc_mocks = [_stem(s) + "_mock.grpc.pb.h" for s in srcs]
        grpc_srcs = [_stem(s) + ".grpc.pb.cc" for s in srcs]
        native.genrule(
            name = name + "_cc_grpc_gen",
            srcs = srcs + proto_deps,
            outs = grpc_hdrs + grpc_mocks + grpc_srcs,
            cmd = _protoc(
                "--plugin=protoc-gen-grpc=%s --grpc_out=generate_mock_code=true:$(GENDIR)/%s" %
                (_GRPC_PLUGIN, native.package_name()),
                srcs,
            ),
        )
        native.cc_library(
            name = name + "_cc_grpc",
            srcs = grpc_srcs,
            hdrs = grpc_hdrs + grpc_mocks,
            includes = ["."],
            deps = [name + "_cc_proto", "//third_party:grpc"],
            visibility = visibility,
        )
