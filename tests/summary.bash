# summary.bash: adding up test counts from runners' summaries, shared by
# ./dev test and the tier scripts that run unit executables or pytest
# themselves (tests/tsan/tier-tsan). Sourced, not run: the functions add to
# the caller's PASSED, FAILED and SKIPPED (integers it initialises).

# Adds up a runner's summary line "... N passed, N failed, N skipped ..." (any
# order, any subset), as pytest and our own tier scripts print it.
add_summary() {
  local line=$1 n word
  while read -r n word; do
    case $word in
      passed) PASSED=$((PASSED + n)) ;;
      failed | error | errors) FAILED=$((FAILED + n)) ;;
      skipped) SKIPPED=$((SKIPPED + n)) ;;
    esac
  done < <(grep -oE '[0-9]+ (passed|failed|errors?|skipped)' <<<"$line")
}

# Adds up the test cases of a Catch2 executable's output; returns 1 (adding
# nothing) when the output has no Catch2 summary, e.g. the run crashed.
add_catch2_summary() {
  local out=$1
  if [[ $out =~ All\ tests\ passed\ \(([0-9]+)\ assertions?\ in\ ([0-9]+)\ test\ cases?\) ]]; then
    PASSED=$((PASSED + BASH_REMATCH[2]))
  elif [[ $out =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ passed\ \|\ +([0-9]+)\ failed ]]; then
    PASSED=$((PASSED + BASH_REMATCH[2]))
    FAILED=$((FAILED + BASH_REMATCH[3]))
  elif [[ $out =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ failed ]]; then
    FAILED=$((FAILED + BASH_REMATCH[2]))
  else
    return 1
  fi
}
