#!/bin/sh
# Install fio with apt-get when it is missing and we are root; otherwise say how.
# Never fails: without fio the suite skips its fio benchmarks and the report says why.
if command -v fio >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "fio is missing: installing it with apt-get"
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio) >/dev/null 2>&1; then
        command -v fio >/dev/null 2>&1 && { fio --version; exit 0; }
    fi
    echo "warning: apt-get could not install fio; fio benchmarks will be skipped" >&2
else
    echo "warning: fio is not installed; fio benchmarks will be skipped." >&2
    echo "         install it with: sudo apt-get install fio   (or your OS's package manager)" >&2
fi
exit 0
