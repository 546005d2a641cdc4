#include "tests/integration/daemon.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <grpcpp/generic/generic_stub.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/client.h"

namespace kagent::testing {

std::string ReadFile(const std::string& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Daemon::Daemon(std::string dir_in, std::vector<std::string> extra) : dir(std::move(dir_in)) {
  std::vector<std::string> argv = {BinaryDir() + "/tools/kagentd", "--listen=127.0.0.1:0",
                                   "--metrics-listen=127.0.0.1:0", "--gpus=cpu",
                                   "--db=" + dir + "/kagent.db", "--drain-seconds=1",
                                   "--no-worker-timeout-seconds=20"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  proc = std::make_unique<Process>(argv, std::map<std::string, std::string>{}, dir + "/kagentd.log");
  ready = proc->ReadyLine(absl::Seconds(120));
  INFO(proc->Log());
  REQUIRE(ready.is_object());
  port = ready["port"];
  metrics_port = ready["metrics_port"];
  channel = *MakeChannel(addr(), ChannelOptions());
  jobs = v1::JobService::NewStub(channel);
}

std::string Daemon::addr() const { return absl::StrCat("127.0.0.1:", port); }

int Daemon::Cli(std::vector<std::string> args, std::string* out, std::string* err) {
  std::vector<std::string> argv = {BinaryDir() + "/tools/kagent", "--server", addr()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string e;
  return RunCommand(argv, out, err ? err : &e);
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  CallOptions o;
  o.timeout = absl::Seconds(20);
  o.token = token;
  return MakeClientContext(o);
}

std::string Fixture(const std::string& name) { return SourceDir() + "/python/tests/fixtures/" + name; }

double Sample(const std::string& scrape, const std::string& family) {
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0 && line.rfind(family + " ", 0) != 0) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

v1::SubmitJobRequest ReluAddJob(int rounds) {
  v1::SubmitJobRequest r;
  r.mutable_problem()->set_name("relu_add");
  r.mutable_problem()->set_source(ReadFile(Fixture("problem_relu_add.py")));
  r.mutable_start_kernel()->set_source(ReadFile(Fixture("cand_relu_add_good.py")));
  r.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_config()->mutable_budget()->set_max_rounds(rounds);
  return r;
}

grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, const std::string& token,
                          std::string* response) {
  grpc::GenericStub stub(channel);
  auto ctx = Ctx(token);
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1);
  grpc::ByteBuffer resp;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &req, &resp, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  if (response != nullptr && status.ok()) {
    std::vector<grpc::Slice> slices;
    (void)resp.Dump(&slices);
    response->clear();
    for (const grpc::Slice& s : slices) {
      response->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

}  // namespace kagent::testing
