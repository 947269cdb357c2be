# cmake -DCOMMAND="a|b|c" -DEXPECT=<regex> -P expect_failure.cmake
# Runs COMMAND ('|' separates arguments), prints its output, and prints "expect_failure: PASS" only when the
# command exited non-zero AND its output matches EXPECT; ctest checks that line with PASS_REGULAR_EXPRESSION.
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
message("exit status: ${status}")
if(status EQUAL 0)
  message("expect_failure: FAIL (the command succeeded, a failure was expected)")
elseif(NOT "${out}${err}" MATCHES "${EXPECT}")
  message("expect_failure: FAIL (the output does not match '${EXPECT}')")
else()
  message("expect_failure: PASS")
endif()
