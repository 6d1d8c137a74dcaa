#!/usr/bin/env bash
# Prints a Debian Depends: value for an ELF binary: each library in its NEEDED entries (readelf -d),
# resolved to a file by the dynamic linker's cache (ldconfig -p), that file to the package that
# installed it (dpkg -S, trying the path as given and through /usr-merge's links), as
# `package (>= installed version)`, sorted, one per package. Fails on a library no package owns.
set -euo pipefail
binary="$1"
declare -A seen=()
entries=()
cache="$(ldconfig -p)"
while read -r soname; do
    file="$(awk -v name="$soname" '$1 == name && /x86-64/ && !found { print $NF; found = 1 }' <<<"$cache")"
    if [ -z "$file" ]; then echo "elf-depends: $soname is not in the linker cache" >&2; exit 1; fi
    package=""
    for candidate in "$file" "$(readlink -f "$file")" "${file#/usr}" "/usr${file#/usr}"; do
        package="$(dpkg -S "$candidate" 2>/dev/null | sed -n '1s/:.*//p')" && [ -n "$package" ] && break
    done
    if [ -z "$package" ]; then echo "elf-depends: no package owns $file ($soname)" >&2; exit 1; fi
    [ -n "${seen[$package]:-}" ] && continue
    seen[$package]=1
    entries+=("$package (>= $(dpkg-query -W -f='${Version}' "$package"))")
done < <(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
printf '%s\n' "${entries[@]}" | sort | paste -sd, - | sed 's/,/, /g'
