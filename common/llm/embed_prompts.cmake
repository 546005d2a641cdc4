# Generates a C++ source holding the prompt templates.
#   cmake -DOUTPUT=<file.cc> -DPROMPT_DIR=<dir> -P embed_prompts.cmake
file(GLOB files "${PROMPT_DIR}/*.md")
list(SORT files)
set(delim "kagent_prompt")
set(body "")
set(count 0)
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" text)
  string(FIND "${text}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )${delim}\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"${delim}(${text})${delim}\"},\n")
  math(EXPR count "${count} + 1")
endforeach()
if(count EQUAL 0)
  set(body "    {nullptr, nullptr},\n")
endif()
set(content "// Generated from ${PROMPT_DIR} by embed_prompts.cmake. Do not edit.
#include \"common/llm/builtin_prompts.h\"

namespace kagent::llm::internal {

const BuiltinPrompt kBuiltinPrompts[] = {
${body}};
const size_t kBuiltinPromptCount = ${count};

}  // namespace kagent::llm::internal
")
# Only touch the output when it changes, to avoid needless rebuilds.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL content)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${content}")
