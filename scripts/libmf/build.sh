#!/usr/bin/env bash
# Builds LIBMF (the C++ inside the PyPI sdist libmf==0.9.2) with scripts/libmf/driver.cpp
# into target/libmf/libmf_driver, for benches/peers.rs.
#
#   bash scripts/libmf/build.sh          # download once, build when something changed
#
# LIBMF's code is downloaded at run time into target/ (gitignored) and never committed.
# Exits non-zero with one line starting "libmf build: " on stderr when something is
# missing (g++, pip, network, the expected files in the sdist); the bench prints that
# line and skips LIBMF.
set -euo pipefail

VERSION=0.9.2
# sha256 of libmf-0.9.2.tar.gz as served by PyPI (checked on 2026-11-21).
SHA256=11260ed5f2eea534039a443c2f8925dcd91ea047371f3d325ef2fb9b79e9dac9

src_dir=${BASH_SOURCE[0]%/*}
[[ "$src_dir" == "${BASH_SOURCE[0]}" ]] && src_dir=.
here=$(cd "$src_dir" && pwd)
root=$(cd "$here/../.." && pwd)
# LIBMF_DIR: where to download and build (default target/libmf, where the bench looks).
out="${LIBMF_DIR:-$root/target/libmf}"
sdist="$out/libmf-$VERSION.tar.gz"
src="$out/libmf-$VERSION/src_cpp"
bin="$out/libmf_driver"

fail() {
    echo "libmf build: $*" >&2
    exit 1
}

command -v g++ >/dev/null || fail "g++ not found (install g++: apt-get install g++)"
command -v tar >/dev/null || fail "tar not found"
mkdir -p "$out"

if [[ ! -f "$sdist" ]]; then
    if command -v pip >/dev/null; then
        pip=(pip)
    elif command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
        pip=(python3 -m pip)
    else
        fail "pip not found: cannot download the libmf==$VERSION sdist"
    fi
    echo "libmf build: downloading the libmf==$VERSION sdist from PyPI" >&2
    if ! "${pip[@]}" download --no-deps --no-binary :all: --disable-pip-version-check \
        "libmf==$VERSION" -d "$out" >"$out/pip.log" 2>&1; then
        tail -n 3 "$out/pip.log" >&2 || true
        fail "pip download libmf==$VERSION failed (no network or PyPI unreachable?); log in $out/pip.log"
    fi
    [[ -f "$sdist" ]] || fail "pip download did not produce $sdist (got: $(ls "$out" | tr '\n' ' '))"
fi

got=$(sha256sum "$sdist" | cut -d' ' -f1)
if [[ "$got" != "$SHA256" ]]; then
    rm -f "$sdist"
    fail "sha256 of libmf-$VERSION.tar.gz is $got, expected $SHA256 (file removed; rerun to download again)"
fi

if [[ ! -f "$src/mf.cpp" || ! -f "$src/mf.h" ]]; then
    tar -xzf "$sdist" -C "$out" || fail "cannot unpack $sdist"
fi
for f in mf.cpp mf.h; do
    [[ -f "$src/$f" ]] || fail "unexpected sdist layout: no src_cpp/$f in libmf-$VERSION (found: $(tar -tzf "$sdist" | tr '\n' ' '))"
done
grep -q "mf_train_with_validation" "$src/mf.h" ||
    fail "unexpected sdist layout: $src/mf.h does not declare mf_train_with_validation"

# SIMD: mf.cpp has an AVX path (-DUSEAVX, 256-bit intrinsics), an SSE3 path (-DUSESSE)
# and a scalar one; LIBMF's own Makefile builds with -DUSEAVX -mavx when the CPU has AVX.
defines=$(g++ -march=native -dM -E -x c++ /dev/null)
if grep -q "__AVX__" <<<"$defines"; then
    simd=(-DUSEAVX)
elif grep -q "__SSE3__" <<<"$defines"; then
    simd=(-DUSESSE)
else
    simd=()
fi
# OpenMP (-DUSEOMP) parallelises LIBMF's set-up and evaluation loops; training itself runs
# on std::threads. The sdist's setup.py compiles with -std=c++11 (mf.cpp uses
# std::random_shuffle, removed in C++17).
flags=(-O3 -march=native -std=c++11 -pthread -fopenmp -DUSEOMP "${simd[@]}")

echo 'int main() { return 0; }' >"$out/omp_check.cpp"
g++ -fopenmp "$out/omp_check.cpp" -o "$out/omp_check" 2>"$out/omp_check.log" ||
    fail "g++ -fopenmp does not link (libgomp missing?): $(head -n 1 "$out/omp_check.log")"

info="$out/BUILD_INFO"
want="flags: ${flags[*]}
g++: $(g++ --version | head -n 1)
sdist: libmf-$VERSION.tar.gz sha256 $SHA256"
if [[ -x "$bin" && -f "$info" && "$(cat "$info")" == "$want" &&
    "$bin" -nt "$here/driver.cpp" && "$bin" -nt "$src/mf.cpp" && "$bin" -nt "$here/build.sh" ]]; then
    echo "libmf build: up to date: $bin (${flags[*]})" >&2
    exit 0
fi

echo "libmf build: g++ ${flags[*]}" >&2
# LIBMF's own file is third-party code: its deprecation warnings are silenced (-w).
g++ "${flags[@]}" -w -c "$src/mf.cpp" -o "$out/mf.o" 2>"$out/mf.log" ||
    fail "compiling mf.cpp failed: $(head -n 3 "$out/mf.log" | tr '\n' ' ')"
g++ "${flags[@]}" -Wall -Wextra -I"$src" -c "$here/driver.cpp" -o "$out/driver.o" 2>"$out/driver.log" ||
    fail "compiling driver.cpp failed: $(head -n 3 "$out/driver.log" | tr '\n' ' ')"
[[ -s "$out/driver.log" ]] && cat "$out/driver.log" >&2
g++ "${flags[@]}" "$out/driver.o" "$out/mf.o" -o "$bin" 2>"$out/link.log" ||
    fail "linking libmf_driver failed: $(head -n 3 "$out/link.log" | tr '\n' ' ')"
printf '%s' "$want" >"$info"
echo "libmf build: built $bin" >&2
