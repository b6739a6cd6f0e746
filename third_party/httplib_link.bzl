"""How a program links cpp-httplib: Debian's shared library, or in a release its static archive.

Debian ships cpp-httplib's library shared only (libcpp-httplib0.11), and Debian 13 has another
soname. A release build (`--config=release`) given `--define=breaker_httplib=DIR`, the directory
tools/httplib_archive.sh prints, links DIR/libcpp-httplib.a instead: Debian's library rebuilt
as an archive from Debian's source. Without the define, and in every other build, the program
links the shared library. OpenSSL, zlib and Brotli stay shared either way: libcurl loads them
(libbrotli1 too), and they take Debian's security updates.
"""

def _httplib_link_impl(ctx):
    directory = ctx.var.get("breaker_httplib", "") if ctx.attr.static else ""
    if directory and not directory.startswith("/"):
        fail(("--define=breaker_httplib=%s: give the absolute directory that " +
              "tools/httplib_archive.sh prints") % directory)
    if directory:
        library = [directory + "/libcpp-httplib.a", "-lbrotlienc", "-lbrotlidec", "-lz"]
    else:
        library = ["-lcpp-httplib"]
    linker_input = cc_common.create_linker_input(
        owner = ctx.label,
        user_link_flags = depset(library + ["-lssl", "-lcrypto", "-pthread"]),
    )
    return [CcInfo(linking_context = cc_common.create_linking_context(
        linker_inputs = depset([linker_input]),
    ))]

httplib_link = rule(
    implementation = _httplib_link_impl,
    attrs = {
        "static": attr.bool(doc = "Whether this build links static archives (--config=release)."),
    },
)
