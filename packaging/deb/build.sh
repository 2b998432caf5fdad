#!/bin/bash
# make deb: build B/floe_VERSION_ARCH.deb with dpkg-deb from what `make
# install` puts under /usr and /etc, plus control files from this folder.
# Dependencies are computed by dpkg-shlibdeps from the two binaries.
#   packaging/deb/build.sh BUILD_DIR VERSION
set -eu
cd "$(dirname "$0")/../.."
B=${1:-build}
V=${2:-unknown}
# A Debian version: digits first. "v1.2-3-g9e1f2aa" -> 1.2+3+g9e1f2aa,
# a commit without a tag "16f54ac" -> 0~git16f54ac; "-dirty" stays, as
# "+dirty"; the package revision is 1.
UP=$(echo "$V" | sed -e 's/^v//' -e 's/-/+/g' | tr -cd 'A-Za-z0-9.+~')
case $UP in [0-9]*) ;; *) UP=0~git$UP ;; esac
DEBV=$UP-1
ARCH=$(dpkg --print-architecture)
D=$B/deb/root
rm -rf "$B/deb"
mkdir -p "$D/DEBIAN"

make -s B="$B" install DESTDIR="$PWD/$D" PREFIX=/usr sysconfdir=/etc \
	systemdunitdir=/lib/systemd/system >/dev/null
# Debian's layout: example under the package's doc folder, man pages and
# changelog compressed, binaries stripped.
mv "$D/usr/share/doc/floe/floe.conf.example" "$D/usr/share/doc/floe/floe.conf"
gzip -9n "$D"/usr/share/man/man*/*
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
	"$D/usr/sbin/floe" "$D/usr/sbin/floectl"
chmod 0644 "$D/etc/floe/floe.conf"
{
	echo "floe ($DEBV) unstable; urgency=medium"
	echo
	echo "  * Built from $V by make deb; see /usr/share/doc/floe/changelog.gz."
	echo
	echo " -- floe developers <floe@floe.invalid>  $(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$D/usr/share/doc/floe/changelog.Debian.gz"
gzip -9n <CHANGELOG.md >"$D/usr/share/doc/floe/changelog.gz"
{
	cat <<EOT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: floe
Source: the floe repository

Files: *
Copyright: 2026 floe developers
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may
 not use this file except in compliance with the License. You may obtain a
 copy of the License at
 .
     http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 License for the specific language governing permissions and limitations
 under the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in /usr/share/common-licenses/Apache-2.0.
EOT
} >"$D/usr/share/doc/floe/copyright"

# Shared-library dependencies, as dpkg-shlibdeps finds them (it wants a
# debian/control beside it).
S=$B/deb/shlibs
mkdir -p "$S/debian"
printf 'Source: floe\n\nPackage: floe\nArchitecture: any\n' >"$S/debian/control"
deps=$(cd "$S" && dpkg-shlibdeps -O "$OLDPWD/$D/usr/sbin/floe" \
	"$OLDPWD/$D/usr/sbin/floectl" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$D" | cut -f1)
sed -e "s|@VERSION@|$DEBV|" -e "s|@ARCH@|$ARCH|" -e "s|@DEPENDS@|$deps|" \
	-e "s|@SIZE@|$size|" packaging/deb/control >"$D/DEBIAN/control"
echo /etc/floe/floe.conf >"$D/DEBIAN/conffiles"
for s in postinst prerm postrm; do
	install -m 0755 "packaging/deb/$s" "$D/DEBIAN/$s"
done
(cd "$D" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
	sort -z | xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$D/DEBIAN/md5sums" "$D/DEBIAN/conffiles" "$D/DEBIAN/control"

OUT=$B/floe_${DEBV}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$D" "$OUT" >/dev/null
echo "$OUT"
