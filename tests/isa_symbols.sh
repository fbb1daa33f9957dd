#!/usr/bin/env bash
# The ISA sources (kernels/dispatch.h) are compiled once per instruction set and
# linked into one library. That is safe only if their AVX2 and AVX-512 objects
# define nothing the linker could pick in place of a baseline definition: no
# global or weak symbol outside the namespaces of their own instruction set
# (an inline function or template of a shared header, instantiated there, would
# be one copy among several and may be the AVX-512 one that baseline code calls).
# (DW.ref.__gxx_personality_v0, the exception personality pointer every C++
# object carries, is the same in all of them; so are the RTTI of function
# types, "typeinfo [name] for void (long, float*)", which clang's UBSan
# (-fsanitize=function) emits beside every function: data naming a type,
# never code; and clang's own two: __clang_call_terminate (two calls, the
# same in every object) and .gomp_critical_user_.reduction.var (the lock of
# OpenMP reductions, one shared variable by design).) nm -C prints a function
# template's instantiation after its return type ("void attn::...::avx2::
# gemm_tile<2, 3>(...)", the inline templates of the ISA-internal headers such
# as kernels/tile_gemm.h): a leading return type without '<' or '(' is skipped.
# Usage: isa_symbols.sh BUILD_DIR. Fails listing every offending symbol.
set -euo pipefail
build_dir=$1
status=0
checked=0
for isa in avx2 avx512; do
  dir="$build_dir/CMakeFiles/attn_isa_$isa.dir"
  [[ -d $dir ]] || { echo "isa_symbols: no objects in $dir"; exit 1; }
  while IFS= read -r -d '' obj; do
    checked=$((checked + 1))
    # defined symbols with external linkage (global or weak; nm's upper-case
    # types, 'u' unique globals, 'w'/'v' weak), demangled
    bad=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[A-Zuvw]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }' |
      grep -v -E "^([^(<]* )?attn::[A-Za-z_:]*::${isa}::|^DW\.ref\.__gxx_personality_v0$|^typeinfo (name )?for [^(]*\(|^__clang_call_terminate$|^\.gomp_critical_user_\.reduction\.var$" || true)
    if [[ -n $bad ]]; then
      echo "isa_symbols: $obj ($isa) defines symbols outside the $isa namespaces:"
      echo "$bad" | sed 's/^/  /'
      status=1
    fi
  done < <(find "$dir" -name '*.o' -print0)
done
[[ $checked -gt 0 ]] || { echo "isa_symbols: no object files found"; exit 1; }
echo "isa_symbols: $checked objects checked"
exit $status
