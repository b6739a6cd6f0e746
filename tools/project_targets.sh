# Sourced by the tools that build the project in an output base of their own (tsa.sh,
# sanitize.sh): sets `targets` to every package of the project, named directory by directory
# rather than as //..., because the workspace's bazel-* links point into the ordinary build's
# output base, which such a build would walk into.
targets=(//:all)
for package in */; do
  package="${package%/}"
  case "$package" in bazel-*) continue ;; esac
  if [ -f "$package/BUILD.bazel" ]; then targets+=("//$package/..."); fi
done
