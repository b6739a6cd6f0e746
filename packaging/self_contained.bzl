"""The client library with its dependencies inside, showing only its API: an archive and a .so.

Both merge the project's objects and the static archives they need by `ld -r` into one
relocatable object whose only global definitions are the API's symbols.

- self_contained_archive: that object in an archive, from Debian's static archives as they are.
  A program links it with its C runtime and libstdc++.
- self_contained_shared_library: that object linked into a shared object with libstdc++ and
  libgcc inside. A few of Debian's static archives (Protobuf, RE2, gflags, six of Abseil's)
  hold code compiled for executables only (local-exec TLS, copy relocations; tools/pic_deps.sh
  says which), which no shared object can contain; tools/pic_deps.sh rebuilds exactly those
  position-independent from Debian's sources, and this rule takes them from the directory
  `--define=breaker_pic_deps=DIR` names, every other archive from Debian.

Either way a program's own copies of gRPC or Protobuf never meet the library's.
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

# The shell that merges: finds each named static archive (first in $pic_dir, when set, then in
# Debian's directory), links the objects with them by `ld -r`, and leaves only the API global.
_MERGE = """
set -eu
weaken="$1"; merged="$2"; pattern="$3"; pic_dir="$4"; shift 4
objects=""
while [ "$1" != "--" ]; do objects="$objects $1"; shift; done
shift
archives=""
for name; do
  for archive in /usr/lib/x86_64-linux-gnu/lib$name.a; do
    rebuilt="$pic_dir/${archive##*/}"
    if [ -n "$pic_dir" ] && [ -f "$rebuilt" ]; then archive="$rebuilt"; fi
    archives="$archives $archive"
  done
done
# -d gives common symbols (OpenSSL's) their space, and --force-group-allocation dissolves the
# COMDAT groups, so that objcopy can localize every symbol and no program's inline function
# is deduplicated against a localized copy.
ld -r -d --force-group-allocation -o "$merged" $objects \\
  --start-group $archives --end-group
python3 "$weaken" "$merged" >/dev/null
objcopy --wildcard --keep-global-symbol="$pattern" "$merged"
"""

def _merge(ctx, pic_dir):
    """Declares the merged object and the action that makes it; returns the object."""
    objects = _project_objects(ctx)
    merged = ctx.actions.declare_file(ctx.label.name + ".o")
    args = ctx.actions.args()
    args.add(ctx.file._weaken_unique)
    args.add(merged)
    args.add(ctx.attr.export_pattern)
    args.add(pic_dir)
    args.add_all(objects)
    args.add("--")
    args.add_all(_archive_flags(ctx))
    ctx.actions.run_shell(
        inputs = objects + [ctx.file._weaken_unique],
        outputs = [merged],
        arguments = [args],
        command = _MERGE,
        mnemonic = "SelfContainedMerge",
        progress_message = "Merging %s with its static dependencies" % ctx.label,
    )
    return merged

def _self_contained_archive_impl(ctx):
    merged = _merge(ctx, "")
    ctx.actions.run_shell(
        inputs = [merged],
        outputs = [ctx.outputs.out],
        arguments = [merged.path, ctx.outputs.out.path],
        command = 'rm -f "$2" && ar rcsD "$2" "$1"',
        mnemonic = "SelfContainedArchive",
        progress_message = "Archiving %s" % ctx.outputs.out.short_path,
    )
    return _provide_out(ctx)

# What both rules merge: the deps whole, with the archives they need, behind the API's symbols.
_MERGE_ATTRS = {
    "deps": attr.label_list(providers = [CcInfo], doc = "The libraries to merge, whole."),
    "export_pattern": attr.string(doc = "The global symbols that stay global (a wildcard)."),
    "runtime_libraries": attr.string_list(
        doc = "-l names left out of the merge: the C and C++ runtimes.",
    ),
    "static_deps": attr.string_list(
        doc = "Static archives the deps' archives need in turn (gRPC's c-ares, RE2, ...).",
    ),
    "_weaken_unique": attr.label(
        default = "weaken_unique_symbols.py",
        allow_single_file = True,
    ),
}

def _provide_out(ctx):
    return [DefaultInfo(
        files = depset([ctx.outputs.out]),
        runfiles = ctx.runfiles(files = [ctx.outputs.out]),
    )]

self_contained_archive = rule(
    implementation = _self_contained_archive_impl,
    attrs = dict(
        _MERGE_ATTRS,
        out = attr.output(doc = "The archive."),
    ),
)

def _self_contained_shared_library_impl(ctx):
    pic_dir = ctx.var.get("breaker_pic_deps", "")
    if not pic_dir.startswith("/"):
        fail(("%s needs the position-independent archives: run tools/pic_deps.sh and pass " +
              "--define=breaker_pic_deps=DIR with the absolute directory it prints") % ctx.label)
    merged = _merge(ctx, pic_dir)
    args = ctx.actions.args()
    args.add_all([merged, ctx.file.version_script, ctx.attr.soname, ctx.outputs.out])
    ctx.actions.run_shell(
        inputs = [merged, ctx.file.version_script],
        outputs = [ctx.outputs.out],
        arguments = [args],
        # g++, whose libstdc++ and libgcc go inside, their symbols hidden too
        # (--exclude-libs); every symbol resolved at link time (-z defs), bound at load
        # (-z now) and read-only after (relro).
        command = """
set -eu
g++ -shared -o "$4" "$1" -Wl,--version-script="$2" -Wl,-soname,"$3" \\
  -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL -Wl,-z,defs -Wl,-z,relro,-z,now \\
  -Wl,--as-needed -lm -lpthread
""",
        mnemonic = "SelfContainedSharedLibrary",
        # PATH, for the compiler driver's own search of the linker.
        use_default_shell_env = True,
        progress_message = "Linking %s" % ctx.outputs.out.short_path,
    )
    return _provide_out(ctx)

self_contained_shared_library = rule(
    implementation = _self_contained_shared_library_impl,
    attrs = dict(
        _MERGE_ATTRS,
        out = attr.output(doc = "The shared object, named by its SONAME."),
        soname = attr.string(doc = "The shared object's SONAME."),
        version_script = attr.label(
            allow_single_file = True,
            doc = "The linker version script: which symbols the shared object exports.",
        ),
    ),
)
