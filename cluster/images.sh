# Container images for the local cluster, built without a registry or a Docker engine:
# a docker-archive tarball (manifest.json + config + one layer) imported into containerd.
# Sourced by lifeguard-cluster.

# build_image TAG ROOTFS_DIR ENTRYPOINT_JSON OUT_TAR
build_image() {
  local tag=$1 rootfs=$2 entrypoint=$3 out=$4 tmp
  tmp=$(mktemp -d)
  tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -cf "$tmp/layer.tar" .
  local diff_id
  diff_id=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  cat >"$tmp/config.json" <<CFG
{"architecture":"amd64","os":"linux","config":{"Entrypoint":$entrypoint,"Env":["PATH=/bin:/usr/bin:/sbin:/usr/sbin"]},"rootfs":{"type":"layers","diff_ids":["sha256:$diff_id"]}}
CFG
  printf '[{"Config":"config.json","RepoTags":["%s"],"Layers":["layer.tar"]}]\n' "$tag" >"$tmp/manifest.json"
  tar -C "$tmp" -cf "$out" manifest.json config.json layer.tar
  rm -rf "$tmp"
}

# import_image TAR TAG: into every node's containerd (each node has its own image store).
import_image() {
  local tar=$1 tag=$2 n
  for n in $(node_names); do
    ctr --address "$(node_socket "$n")" -n k8s.io images import "$tar" >>"$LG_LOGS/images.log" 2>&1 ||
      die "importing image $tag into $n failed" "$LG_LOGS/images.log"
  done
}

# tag_image SOURCE TARGET: a new name for an imported image, on every node.
tag_image() {
  local source=$1 target=$2 n
  for n in $(node_names); do
    ctr --address "$(node_socket "$n")" -n k8s.io images tag --force "$source" "$target" >>"$LG_LOGS/images.log" 2>&1 ||
      die "tagging $source as $target on $n failed" "$LG_LOGS/images.log"
  done
}

# Base images every cluster needs: the pod sandbox (pause) and busybox for test pods.
make_base_images() {
  local cache="$LG_CACHE/images" root
  mkdir -p "$cache"
  if [ ! -s "$cache/pause-$LG_K8S_VERSION.tar" ]; then
    step "build the pause image"
    root=$(mktemp -d)
    gcc -Os -static -o "$root/pause" "$LG_K8S_BIN/pause.c" 2>>"$LG_LOGS/images.log" ||
      die "compiling pause.c failed" "$LG_LOGS/images.log"
    build_image "$LG_PAUSE_IMAGE" "$root" '["/pause"]' "$cache/pause-$LG_K8S_VERSION.tar"
    rm -rf "$root"
  fi
  if [ ! -s "$cache/busybox.tar" ]; then
    step "build the busybox image"
    root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/tmp" "$root/etc"
    cp /bin/busybox "$root/bin/busybox"
    local applet
    for applet in $("$root/bin/busybox" --list); do
      [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
    chmod 1777 "$root/tmp"
    build_image "$LG_BUSYBOX_IMAGE" "$root" '["/bin/sh"]' "$cache/busybox.tar"
    rm -rf "$root"
  fi
  step "import images into containerd"
  import_image "$cache/pause-$LG_K8S_VERSION.tar" "$LG_PAUSE_IMAGE"
  import_image "$cache/busybox.tar" "$LG_BUSYBOX_IMAGE"
}
