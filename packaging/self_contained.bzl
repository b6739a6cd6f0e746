"""A static archive that carries its dependencies inside and shows only an API.

Debian's static archives of Protobuf, Abseil and RE2 hold thread-local variables compiled for
executables (local-exec TLS, R_X86_64_TPOFF32 relocations), so no shared object can contain
them. An executable can, so the self-contained form of the client library is an archive: the
project's objects and the static archives they need, merged by `ld -r` into one relocatable
object whose only global definitions are the API's symbols. A program links it with its C
runtime and libstdc++, and its own copies of gRPC or Protobuf never meet the library's.
"""

def _archive_flags(ctx):
    """The static archives the deps' `-lfoo` link flags name, and the extra ones (globs allowed)."""
    names = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for flag in linker_input.user_link_flags:
                if flag.startswith("-l") and flag[2:] not in ctx.attr.runtime_libraries:
                    names.append(flag[2:])
    names.extend(ctx.attr.static_deps)
    unique = []
    for name in names:
        if name not in unique:
            unique.append(name)
    return unique

def _project_objects(ctx):
    objects = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for library in linker_input.libraries:
                objects.extend(library.pic_objects or library.objects)
    return objects

def _self_contained_archive_impl(ctx):
    objects = _project_objects(ctx)
    merged = ctx.actions.declare_file(ctx.label.name + ".o")
    args = ctx.actions.args()
    args.add(ctx.file._weaken_unique)
    args.add(merged)
    args.add(ctx.attr.export_pattern)
    args.add(ctx.outputs.out)
    args.add_all(objects)
    args.add("--")
    args.add_all(_archive_flags(ctx))
    ctx.actions.run_shell(
        inputs = objects + [ctx.file._weaken_unique],
        outputs = [merged, ctx.outputs.out],
        arguments = [args],
        command = """
set -eu
weaken="$1"; merged="$2"; pattern="$3"; out="$4"; shift 4
objects=""
while [ "$1" != "--" ]; do objects="$objects $1"; shift; done
shift
archives=""
for name; do
  for archive in /usr/lib/x86_64-linux-gnu/lib$name.a; do archives="$archives $archive"; done
done
# -d gives common symbols (OpenSSL's) their space, and --force-group-allocation dissolves the
# COMDAT groups, so that objcopy can localize every symbol and no program's inline function
# is deduplicated against a localized copy.
ld -r -d --force-group-allocation -o "$merged" $objects \\
  --start-group $archives --end-group
python3 "$weaken" "$merged" >/dev/null
objcopy --wildcard --keep-global-symbol="$pattern" "$merged"
rm -f "$out"
ar rcsD "$out" "$merged"
""",
        mnemonic = "SelfContainedArchive",
        progress_message = "Merging %s with its static dependencies" % ctx.outputs.out.short_path,
    )
    return [DefaultInfo(
        files = depset([ctx.outputs.out]),
        runfiles = ctx.runfiles(files = [ctx.outputs.out]),
    )]

self_contained_archive = rule(
    implementation = _self_contained_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo], doc = "The libraries to merge, whole."),
        "export_pattern": attr.string(doc = "The global symbols that stay global (a wildcard)."),
        "out": attr.output(doc = "The archive."),
        "runtime_libraries": attr.string_list(
            doc = "-l names left to the program's own link: the C and C++ runtimes.",
        ),
        "static_deps": attr.string_list(
            doc = "Static archives the deps' archives need in turn (gRPC's c-ares, RE2, ...).",
        ),
        "_weaken_unique": attr.label(
            default = "weaken_unique_symbols.py",
            allow_single_file = True,
        ),
    },
)
