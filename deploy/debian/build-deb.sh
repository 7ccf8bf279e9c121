#!/usr/bin/env bash
# build-deb.sh BUILD_DIR [OUT_DIR]: a Debian package of a zbso build (dpkg-deb): the zbso
# binary, libzbso.so, the public header, the systemd unit and its default configuration
# /etc/zbso/zbso.env (a conffile), and what `cmake --install` installs beside them: the man
# pages (BUILD_DIR/man, gzipped as Debian's are) and the bash, zsh and fish completions
# (BUILD_DIR/completions), both made at every build (packaging/CMakeLists.txt), at
# Debian's paths. Depends comes from dpkg-shlibdeps. Writes
# OUT_DIR/zbso_VERSION_ARCH.deb (default OUT_DIR: BUILD_DIR) and prints its path.
# Build with the default build type (RelWithDebInfo): the files are stripped here.
# Needs dpkg-dev (dpkg-shlibdeps, dpkg-architecture) and binutils (strip).
set -euo pipefail

die() {
    echo "build-deb.sh: $*" >&2
    exit 1
}

(($# >= 1 && $# <= 2)) || die "usage: build-deb.sh BUILD_DIR [OUT_DIR]"
here="$(cd "$(dirname "$0")" && pwd)"
deploy="$(dirname "$here")"
src="$(dirname "$deploy")"
build="$(cd "$1" && pwd)"
out="${2:-$build}"

bin="$build/src/cli/zbso"
lib="$(ls "$build"/src/client/libzbso.so.*.*.* 2>/dev/null | head -n 1)"
[[ -x "$bin" ]] || die "$bin not found: build zbso first (ninja -C $1)"
[[ -n "$lib" ]] || die "libzbso.so.X.Y.Z not found in $build/src/client: build zbso_shared"
guard="$build/src/power/zbso-guard"   # puts GPU power limits back after a kill (SPEC 6.1)
[[ -x "$guard" ]] || die "$guard not found: build zbso-guard first (ninja -C $1)"
# The man pages and completions come from the target zbso_man_completions (part of `all`).
man="$build/man"
completions="$build/completions"
[[ -f "$man/zbso.1" ]] || die "$man/zbso.1 not found: build the man pages (ninja -C $1)"
for f in zbso _zbso zbso.fish; do
    [[ -f "$completions/$f" ]] || die "$completions/$f not found: build the completions" \
        "(ninja -C $1)"
done
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture strip gzip; do
    command -v "$tool" >/dev/null ||
        die "$tool not found (Debian packages dpkg-dev, binutils, gzip)"
done

version="$("$bin" --version | awk '{print $NF}')"
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || die "unexpected version '$version' from $bin"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
libname="$(basename "$lib")"                    # libzbso.so.0.1.0
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"  # libzbso.so.0
[[ -n "$soname" ]] || die "$lib has no SONAME"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"

install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/$multiarch" "$root/usr/include/zbso" \
    "$root/lib/systemd/system" "$root/etc/zbso" "$root/usr/share/doc/zbso" \
    "$root/usr/libexec/zbso" "$root/usr/share/man/man1" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
install -m 0755 "$bin" "$root/usr/bin/zbso"
install -m 0755 "$guard" "$root/usr/libexec/zbso/zbso-guard"
install -m 0644 "$lib" "$root/usr/lib/$multiarch/$libname"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$root/usr/bin/zbso" "$root/usr/lib/$multiarch/$libname" "$root/usr/libexec/zbso/zbso-guard"
ln -s "$libname" "$root/usr/lib/$multiarch/$soname"
ln -s "$soname" "$root/usr/lib/$multiarch/libzbso.so"
install -m 0644 "$src/include/zbso/zbso.h" "$root/usr/include/zbso/zbso.h"
install -m 0644 "$deploy/systemd/zbso.service" "$root/lib/systemd/system/zbso.service"
install -m 0600 "$deploy/systemd/zbso.env" "$root/etc/zbso/zbso.env"
install -m 0644 "$deploy/README.md" "$root/usr/share/doc/zbso/README.deploy.md"
# Debian's man pages are gzipped, -n so that the package's bytes do not depend on the
# build's time stamps.
for page in "$man"/*.1; do
    gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
    chmod 0644 "$root/usr/share/man/man1/$(basename "$page").gz"
done
install -m 0644 "$completions/zbso" "$root/usr/share/bash-completion/completions/zbso"
install -m 0644 "$completions/_zbso" "$root/usr/share/zsh/vendor-completions/_zbso"
install -m 0644 "$completions/zbso.fish" \
    "$root/usr/share/fish/vendor_completions.d/zbso.fish"

# dpkg-shlibdeps wants a debian/control beside it; libzbso's own dependencies count too.
mkdir -p "$work/pkg/debian"
printf 'Source: zbso\n\nPackage: zbso\nArchitecture: any\n' >"$work/pkg/debian/control"
depends="$(cd "$work/pkg" && dpkg-shlibdeps -O -S"$root" \
    -l"$root/usr/lib/$multiarch" \
    "$root/usr/bin/zbso" "$root/usr/lib/$multiarch/$libname" \
    "$root/usr/libexec/zbso/zbso-guard" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')"
[[ -n "$depends" ]] || die "dpkg-shlibdeps found no dependencies"

installed_kb="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<CTL
Package: zbso
Version: $version
Architecture: $arch
Maintainer: zbso developers <zbso@localhost>
Installed-Size: $installed_kb
Depends: $depends
Section: net
Priority: optional
Homepage: https://ml.energy/zeus
Description: Zeus batch size optimizer server, client library and CLI
 zbso serve is a C implementation of the Zeus batch size optimizer (BSO)
 server, wire-compatible with the Zeus Python client. The package also holds
 libzbso (the client and GPU energy monitor) with its header, and a hardened
 systemd unit (zbso.service, configured in /etc/zbso/zbso.env), man pages and
 bash, zsh and fish completions.
CTL
echo /etc/zbso/zbso.env >"$root/DEBIAN/conffiles"
echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"

# The unit is not enabled or started by the package: the operator configures
# /etc/zbso/zbso.env first, then `systemctl enable --now zbso`.
cat >"$root/DEBIAN/postinst" <<'SH'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
SH
cat >"$root/DEBIAN/prerm" <<'SH'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl stop zbso.service || true
fi
SH
cat >"$root/DEBIAN/postrm" <<'SH'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
# Purging removes the service's state (its SQLite database) too.
if [ "$1" = purge ]; then
    rm -rf /var/lib/private/zbso /var/lib/zbso /var/log/private/zbso /var/log/zbso
fi
SH
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/zbso_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
