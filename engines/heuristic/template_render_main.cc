// kagent-template-render: renders a template of the embedded library to stdout.
//
//   kagent-template-render <id> [NAME=VALUE ...]   render with these params
//   kagent-template-render --list                   list the template ids
//   kagent-template-render --dir DIR <id> ...       use DIR instead of the embedded files
//
// Exit 0 on success; 2 with the error on stderr otherwise. Used by the template tests
// (KAGENT_TEMPLATE_RENDER) so the Python checks exercise the C++ renderer.
#include <iostream>
#include <map>
#include <string>

#include "engines/heuristic/template_library.h"

int main(int argc, char** argv) {
  std::string dir;
  int i = 1;
  if (i + 1 < argc && std::string(argv[i]) == "--dir") {
    dir = argv[i + 1];
    i += 2;
  }
  auto lib = dir.empty() ? kagent::TemplateLibrary::Embedded()
                         : kagent::TemplateLibrary::FromDirectory(dir);
  if (!lib.ok()) {
    std::cerr << lib.status().ToString() << "\n";
    return 2;
  }
  if (i < argc && std::string(argv[i]) == "--list") {
    for (const std::string& id : (*lib)->Ids()) std::cout << id << "\n";
    return 0;
  }
  if (i >= argc) {
    std::cerr << "usage: kagent-template-render [--dir DIR] <id> [NAME=VALUE ...] | --list\n";
    return 2;
  }
  std::string id = argv[i++];
  std::map<std::string, std::string> params;
  for (; i < argc; ++i) {
    std::string kv = argv[i];
    size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      std::cerr << "expected NAME=VALUE, got '" << kv << "'\n";
      return 2;
    }
    params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto out = (*lib)->Render(id, params);
  if (!out.ok()) {
    std::cerr << out.status().ToString() << "\n";
    return 2;
  }
  std::cout << *out;
  return 0;
}
