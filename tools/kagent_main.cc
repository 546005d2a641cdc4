// kagent: the command-line client. See tools/cli.h for the commands.
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return kagent::cli::Run(args, std::cout, std::cerr);
}
