#!/bin/sh
# Install what building and testing floe needs on Debian, only if missing.
# python3-botocore, -jwt and -cryptography are independent verifiers: AWS's
# SigV4 signer and an RS256 JWT checker (tests/catauth/). systemd gives
# systemd-analyze (the unit is verified offline; systemd need not run),
# mandoc lints the man pages, dpkg-dev and lintian build and check the
# .deb. prometheus gives promtool and a real server for the scrape test;
# chromium, headless, loads the status page (tests/integration/55-metrics.sh,
# 56-status-page.sh).
set -e
PKGS="build-essential pkg-config libevent-dev libcurl4-openssl-dev
libjansson-dev liblmdb-dev libinih-dev libcmocka-dev node-llhttp
libbsd-dev libssl-dev jq curl valgrind nodejs npm clang lmdb-utils
openssl python3 python3-botocore python3-jwt python3-cryptography
etcd-server etcd-client systemd mandoc dpkg-dev lintian prometheus
chromium"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
# node and npm may come from outside Debian's packages; accept any on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
	missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm |
		tr '\n' ' ')
fi
missing=$(echo $missing)
if [ -n "$missing" ]; then
	echo "deps: installing $missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing \
		>/dev/null
fi
echo "deps: ok"
