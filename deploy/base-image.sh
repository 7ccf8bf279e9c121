#!/usr/bin/env bash
# base-image.sh CACHE_DIR [TAG]: makes the Debian 12 base image that deploy/Containerfile
# starts from, where no image registry can be reached: debootstrap --variant=minbase
# bookworm, trimmed the way the official slim image is (no documentation, man pages or
# translations, now or in later installs; no apt lists or caches), then `podman import`
# tagged TAG (default docker.io/library/debian:bookworm-slim, the Containerfile's default
# BASE_IMAGE, so the same Containerfile builds here and against the registry).
#
# The root filesystem's tarball is kept in CACHE_DIR (a build directory, never the
# repository) and reused; nothing is done when podman already holds TAG. Needs root,
# debootstrap and podman; MIRROR (default http://deb.debian.org/debian) picks the mirror.
set -euo pipefail

die() {
    echo "base-image.sh: $*" >&2
    exit 1
}

(($# >= 1 && $# <= 2)) || die "usage: base-image.sh CACHE_DIR [TAG]"
cache="$1"
tag="${2:-docker.io/library/debian:bookworm-slim}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
tarball="$cache/debian-bookworm-minbase.tar"

command -v podman >/dev/null || die "podman not found (Debian package podman)"
if podman image exists "$tag"; then
    echo "base-image.sh: podman already has $tag"
    exit 0
fi

if [[ ! -s "$tarball" ]]; then
    command -v debootstrap >/dev/null || die "debootstrap not found (Debian package debootstrap)"
    [[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
    mkdir -p "$cache"
    root="$(mktemp -d "$cache/rootfs.XXXXXX")"
    trap 'rm -rf "$root"' EXIT
    echo "base-image.sh: debootstrap --variant=minbase bookworm from $mirror"
    if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1
    then
        tail -n 20 "$cache/debootstrap.log" >&2
        die "debootstrap failed (log: $cache/debootstrap.log)"
    fi

    # What the official slim image keeps out of later installs, and the sources it has.
    cat >"$root/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
CFG
    cat >"$root/etc/apt/apt.conf.d/slim" <<'CFG'
APT::Install-Recommends "false";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
Acquire::CompressionTypes::Order:: "gz";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
CFG
    rm -f "$root/etc/apt/sources.list"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<CFG
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
CFG
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$root"/usr/share/{man,info,locale,lintian,linda}/* \
        "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
        "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/tmp/*
    : >"$root/etc/hostname"
    tar --numeric-owner -C "$root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
    trap - EXIT
fi

podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tarball" "$tag" >/dev/null || die "podman import $tarball failed"
echo "base-image.sh: imported $tarball as $tag"
