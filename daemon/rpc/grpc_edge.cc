// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/grpc_edge.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/rpc/node_health_codec.h"
#include "daemon/rpc/peer_client.h"
#include "efawatch/v1/agent.grpc.pb.h"
#include "lib/common/read_file.h"
#include "proto/codec/collective.h"
#include "proto/codec/probes.h"
#include "proto/codec/records.h"
#include "spdlog/spdlog.h"

namespace efawatch::rpc {
namespace {

using codec::ToProto;

// gRPC's own log lines (multi-line error trees on a failed bind, for one) go to our logger at
// debug level: the edge reports outcomes itself, in one line, and stderr stays one line per
// problem.
void ForwardGrpcLog(gpr_log_func_args* args) {
  spdlog::debug("grpc {}:{}: {}", args->file, args->line, args->message);
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())),
                      std::string(s.message()));
}

// One WatchFindings stream. Board updates arrive on the publisher's thread and are turned into
// RAISED/CLEARED events in a bounded queue; gRPC writes them one at a time. A slow reader loses
// events (counted as the next event's gap), never blocks a publisher.
class WatchReactor final : public grpc::ServerWriteReactor<v1::FindingEvent> {
 public:
  static constexpr size_t kMaxQueued = 1024;

  // `open` counts this stream until OnDone.
  WatchReactor(common::FindingsBoard& board, v1::Severity min_severity, std::atomic<uint64_t>& open)
      : board_(board), min_severity_(min_severity), open_(open) {
    OnSnapshot(board_.Snapshot());
    subscription_ = board_.Subscribe([this](const auto& snap) { OnSnapshot(snap); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(grpc::Status::CANCELLED);
      return;
    }
    {
      std::lock_guard lock(mu_);
      writing_ = false;
    }
    WriteNext();
  }

  void OnCancel() override { FinishOnce(grpc::Status::CANCELLED); }

  void OnDone() override {
    board_.Unsubscribe(subscription_);  // after this no listener call is running
    --open_;
    delete this;
  }

 private:
  using Key = std::pair<std::string, std::string>;  // kind, subject

  void OnSnapshot(const std::shared_ptr<const std::vector<common::Finding>>& snap) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      std::map<Key, common::Finding> now;
      for (const auto& f : *snap) {
        if (static_cast<int>(f.severity) < static_cast<int>(min_severity_)) continue;
        now.emplace(Key{f.kind, f.subject}, f);
      }
      for (const auto& [key, f] : now) {
        auto it = known_.find(key);
        if (it == known_.end() || it->second.first_seen != f.first_seen) {
          QueueLocked(v1::FindingEvent::RAISED, f);
        }
      }
      for (const auto& [key, f] : known_) {
        if (!now.contains(key)) QueueLocked(v1::FindingEvent::CLEARED, f);
      }
      known_ = std::move(now);
    }
    WriteNext();
  }

  void QueueLocked(v1::FindingEvent::Kind kind, const common::Finding& f) {
    if (queue_.size() >= kMaxQueued) {
      ++gap_;
      return;
    }
    v1::FindingEvent e;
    e.set_kind(kind);
    ToProto(f, e.mutable_finding());
    e.set_gap(gap_);
    gap_ = 0;
    queue_.push_back(std::move(e));
  }

  // gRPC calls are made without holding mu_: a reaction that runs inline (OnWriteDone,
  // OnDone) must not find the lock taken, and OnDone deletes the reactor.
  void WriteNext() {
    {
      std::lock_guard lock(mu_);
      if (writing_ || finished_ || queue_.empty()) return;
      current_ = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    StartWrite(&current_);
  }

  void FinishOnce(const grpc::Status& status) {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
    }
    Finish(status);
  }

  common::FindingsBoard& board_;
  const v1::Severity min_severity_;
  std::atomic<uint64_t>& open_;
  int subscription_ = 0;
  std::mutex mu_;
  std::map<Key, common::Finding> known_;
  std::deque<v1::FindingEvent> queue_;
  v1::FindingEvent current_;
  uint64_t gap_ = 0;
  bool writing_ = false;
  bool finished_ = false;
};

// A WatchFindings stream refused at once (too many open): finishes with `status`.
class RefusedWatch final : public grpc::ServerWriteReactor<v1::FindingEvent> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// The names a caller's verified client certificate carries: gRPC's peer identity, i.e. its
// subject alternative names, or its common name when it has none (a name in the CN of a
// certificate with SANs is not its identity, as for TLS host names). Empty on plaintext and for
// a server without client certificates.
std::vector<std::string> PeerIdentities(const grpc::CallbackServerContext& ctx) {
  std::vector<std::string> ids;
  const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return ids;
  for (const grpc::string_ref& v : auth->GetPeerIdentity()) ids.emplace_back(v.data(), v.size());
  return ids;
}

// The client's deadline on `clock`: gRPC gives it on the system clock (max() when none).
std::chrono::steady_clock::time_point HandlerDeadline(const grpc::CallbackServerContext& ctx,
                                                      const common::Clock& clock) {
  const std::chrono::system_clock::time_point deadline = ctx.deadline();
  const auto left = deadline - std::chrono::system_clock::now();
  // Beyond a day is no deadline to an operation here; it also keeps the sum below in range.
  if (deadline == std::chrono::system_clock::time_point::max() || left > std::chrono::hours(24)) {
    return std::chrono::steady_clock::time_point::max();
  }
  return clock.Now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
}

// One unary call that the handler answers later, on any thread. The call's CallContext carries
// the client's deadline and a token that OnCancel triggers (gRPC cancels a call whose client
// cancelled or left, or whose deadline passed), so the handler stops its work; the call is
// answered CANCELLED at once, without waiting for it. Exactly one Finish: whoever claims
// `finished` first (the handler's answer or the cancellation) finishes; the other touches neither
// the reactor nor the response, which are gone after OnDone. The state the handler's callback
// keeps is shared, so it may run after the call and even the edge are gone.
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(const grpc::CallbackServerContext& ctx, const common::Clock& clock)
      : state_(std::make_shared<State>()) {
    call_.deadline = HandlerDeadline(ctx, clock);
    call_.cancel = state_->stop.get_token();
  }

  const agent::CallContext& call() const { return call_; }

  // The handler's `done` for a result of type T: `render(result)` fills the response.
  template <typename T, typename Render>
  std::function<void(absl::StatusOr<T>)> Answer(Render render) {
    return [this, state = state_, render = std::move(render)](absl::StatusOr<T> r) {
      if (state->finished.exchange(true)) return;  // cancelled: this reactor may be gone
      if (!r.ok()) return Finish(ToGrpc(r.status()));
      render(*r);
      Finish(grpc::Status::OK);
    };
  }

  void FinishOnce(const grpc::Status& status) {
    if (!state_->finished.exchange(true)) Finish(status);
  }

  void OnCancel() override {
    state_->stop.request_stop();
    FinishOnce(grpc::Status::CANCELLED);
  }

  void OnDone() override { delete this; }

 private:
  struct State {
    std::atomic<bool> finished{false};
    std::stop_source stop;
  };
  const std::shared_ptr<State> state_;
  agent::CallContext call_;
};

}  // namespace

class GrpcEdge::AgentService final : public v1::Agent::CallbackService {
 public:
  AgentService(agent::AgentHandler* handler, Authorizer* authz, size_t max_watch_streams,
               const common::Clock& clock)
      : handler_(handler), authz_(authz), max_watch_streams_(max_watch_streams), clock_(clock) {}

  const GrpcEdgeCounters& counters() const { return counters_; }

  grpc::ServerUnaryReactor* RunCollective(grpc::CallbackServerContext* ctx,
                                          const v1::RunCollectiveRequest* request,
                                          v1::CollectiveResult* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kRunCollective, call)) return call;
    handler_->RunCollective(call->call(), codec::FromProto(*request),
                            call->Answer<collective::Result>(
                                [response](const auto& r) { codec::ToProto(r, response); }));
    return call;
  }

  grpc::ServerUnaryReactor* JoinCollective(grpc::CallbackServerContext* ctx,
                                           const v1::JoinCollectiveRequest* request,
                                           v1::JoinCollectiveResponse* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kJoinCollective, call)) return call;
    handler_->JoinCollective(call->call(), codec::FromProto(*request),
                             call->Answer<collective::JoinResponse>(
                                 [response](const auto& r) { codec::ToProto(r, response); }));
    return call;
  }

  grpc::ServerUnaryReactor* StartCollective(grpc::CallbackServerContext* ctx,
                                            const v1::StartCollectiveRequest* request,
                                            v1::RankResult* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kStartCollective, call)) return call;
    handler_->StartCollective(call->call(), codec::FromProto(*request),
                              call->Answer<collective::RankResult>(
                                  [response](const auto& r) { codec::ToProto(r, response); }));
    return call;
  }

  grpc::ServerUnaryReactor* AbortCollective(grpc::CallbackServerContext* ctx,
                                            const v1::AbortCollectiveRequest* request,
                                            v1::AbortCollectiveResponse* /*response*/) override {
    auto* reactor = ctx->DefaultReactor();
    if (Refused(*ctx, Method::kAbortCollective, reactor)) return reactor;
    handler_->AbortCollective(codec::FromProto(*request));
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetNodeHealth(grpc::CallbackServerContext* ctx,
                                          const v1::GetNodeHealthRequest* /*request*/,
                                          v1::NodeHealth* response) override {
    auto* reactor = ctx->DefaultReactor();
    if (Refused(*ctx, Method::kGetNodeHealth, reactor)) return reactor;
    ToProto(handler_->GetNodeHealth(), response);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Answered inline: the handler answers from what the responder learned at start (no libfabric
  // call).
  grpc::ServerUnaryReactor* GetFabricAddress(grpc::CallbackServerContext* ctx,
                                             const v1::GetFabricAddressRequest* /*request*/,
                                             v1::FabricAddress* response) override {
    auto* reactor = ctx->DefaultReactor();
    if (Refused(*ctx, Method::kGetFabricAddress, reactor)) return reactor;
    auto a = handler_->GetFabricAddress();
    if (!a.ok()) {
      reactor->Finish(ToGrpc(a.status()));
      return reactor;
    }
    codec::ToProto(a->info, a->printable, response);
    response->set_address(a->address);
    response->set_node_name(a->node_name);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const v1::PingRequest* request,
                                 v1::PingResponse* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kPing, call)) return call;
    handler_->Ping(call->call(), Target(*request), codec::FromProto(*request),
                   call->Answer<fabric::PingResult>(
                       [response](const auto& r) { codec::ToProto(r, response); }));
    return call;
  }

  grpc::ServerUnaryReactor* Bandwidth(grpc::CallbackServerContext* ctx,
                                      const v1::BandwidthRequest* request,
                                      v1::BandwidthResponse* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kBandwidth, call)) return call;
    handler_->Bandwidth(call->call(), Target(*request), codec::FromProto(*request),
                        call->Answer<fabric::BandwidthResult>(
                            [response](const auto& r) { codec::ToProto(r, response); }));
    return call;
  }

  grpc::ServerUnaryReactor* RunDoctor(grpc::CallbackServerContext* ctx,
                                      const v1::RunDoctorRequest* /*request*/,
                                      v1::DoctorReport* response) override {
    auto* call = new UnaryCall(*ctx, clock_);
    if (Refused(*ctx, Method::kRunDoctor, call)) return call;
    handler_->RunDoctor(call->call(), call->Answer<doctor::Report>(
                                          [response](const auto& r) { ToProto(r, response); }));
    return call;
  }

  grpc::ServerWriteReactor<v1::FindingEvent>* WatchFindings(
      grpc::CallbackServerContext* ctx, const v1::WatchFindingsRequest* request) override {
    if (auto st = Authorize(*ctx, Method::kWatchFindings); !st.ok()) return new RefusedWatch(st);
    // Each stream is a board subscription run on every publish: their number is capped so
    // that callers cannot make every publish (and the memory of their queues) grow unbounded.
    if (++counters_.watch_streams > max_watch_streams_) {
      --counters_.watch_streams;
      ++counters_.watch_streams_refused;
      return new RefusedWatch(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       absl::StrCat("too many WatchFindings streams: ", max_watch_streams_,
                                    " open (--max-watch-streams)")));
    }
    return new WatchReactor(handler_->findings(), request->min_severity(), counters_.watch_streams);
  }

 private:
  grpc::Status Authorize(const grpc::CallbackServerContext& ctx, Method method) {
    if (!authz_->enabled()) return grpc::Status::OK;
    const std::vector<std::string> ids = PeerIdentities(ctx);
    bool log_now = false;
    absl::Status st = authz_->Check(method, ids, std::chrono::steady_clock::now(), &log_now);
    if (st.ok()) return grpc::Status::OK;
    if (log_now) {
      spdlog::warn(
          "gRPC: refused a call from {}: {} (further refusals of it counted, logged "
          "once a minute)",
          ctx.peer(), std::string(st.message()));
    }
    return ToGrpc(st);
  }

  // True when the call is refused; the reactor is then finished.
  bool Refused(const grpc::CallbackServerContext& ctx, Method method,
               grpc::ServerUnaryReactor* reactor) {
    grpc::Status st = Authorize(ctx, method);
    if (st.ok()) return false;
    reactor->Finish(st);
    return true;
  }
  bool Refused(const grpc::CallbackServerContext& ctx, Method method, UnaryCall* call) {
    grpc::Status st = Authorize(ctx, method);
    if (st.ok()) return false;
    call->FinishOnce(st);
    return true;
  }

  template <typename Request>
  static agent::ProbeTarget Target(const Request& r) {
    return {.peer_agent = r.peer_agent(), .peer_address = r.peer_address()};
  }

  agent::AgentHandler* const handler_;
  Authorizer* const authz_;
  const size_t max_watch_streams_;
  const common::Clock& clock_;
  GrpcEdgeCounters counters_;
};

absl::StatusOr<std::unique_ptr<GrpcEdge>> GrpcEdge::Create(const GrpcEdgeOptions& options,
                                                           agent::AgentHandler* handler) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert_file.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    // Read once here only to name an unreadable file at start. gRPC's provider reads them again
    // every refresh period: renewed certificates (kubelet swaps a Secret's files at once) and a
    // CA bundle holding the old and the new CA during a rotation are used without a restart,
    // and handshakes in flight keep what they started with.
    for (const std::string* file :
         {&options.tls_cert_file, &options.tls_key_file, &options.tls_client_ca_file}) {
      if (file->empty()) continue;
      if (auto text = common::ReadWholeFile(*file); !text.ok()) return text.status();
    }
    auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        options.tls_key_file, options.tls_cert_file, options.tls_client_ca_file,
        RefreshSeconds(options.tls_refresh));
    grpc::experimental::TlsServerCredentialsOptions tls(provider);
    tls.watch_identity_key_cert_pairs();
    if (options.tls_client_ca_file.empty()) {
      tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    } else {
      tls.watch_root_certs();
      tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    }
    creds = grpc::experimental::TlsServerCredentials(tls);
  }

  gpr_set_log_function(ForwardGrpcLog);
  std::unique_ptr<GrpcEdge> edge(new GrpcEdge());
  edge->authz_ = std::make_unique<Authorizer>(options.authz);
  edge->denials_ = std::make_unique<DenialCollector>(*edge->authz_);
  edge->service_ = std::make_unique<AgentService>(
      handler, edge->authz_.get(), options.max_watch_streams,
      options.clock != nullptr ? *options.clock : common::SystemClock::Get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(options.handshake_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(options.idle_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_streams_per_connection);
  builder.RegisterService(edge->service_.get());
  if (options.listen.starts_with("unix:")) {
    // A socket in the pod's own filesystem: only the pod (kubectl exec) reaches it, so it needs
    // no gate. A socket file left by a killed agent would make the bind fail.
    const std::string path = options.listen.substr(5);
    ::unlink(path.c_str());
    int unused = 0;
    builder.AddListeningPort(options.listen, creds, &unused);
    edge->server_ = builder.BuildAndStart();
    if (edge->server_ == nullptr || unused == 0) {
      return absl::UnavailableError(absl::StrCat("grpc listen ", options.listen, ": cannot bind"));
    }
    ::chmod(path.c_str(), 0600);
  } else if (auto st = edge->StartGated(options, creds, builder); !st.ok()) {
    return st;
  }
  auto* health = edge->server_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(v1::Agent::service_full_name(), true);
  return edge;
}

// gRPC listens where only this network namespace reaches it; the gate takes the public port.
absl::Status GrpcEdge::StartGated(const GrpcEdgeOptions& options,
                                  const std::shared_ptr<grpc::ServerCredentials>& creds,
                                  grpc::ServerBuilder& builder) {
  // The name is unique per edge: tests run several agents in one namespace.
  static std::atomic<uint64_t> edges{0};
  const std::string backend =
      absl::StrCat("efawatch-grpc-", ::getpid(), "-", edges.fetch_add(1), "-",
                   std::chrono::steady_clock::now().time_since_epoch().count());
  int unix_port = 0;
  builder.AddListeningPort(absl::StrCat("unix-abstract:", backend), creds, &unix_port);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || unix_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("grpc: cannot listen on the abstract unix socket ", backend));
  }
  // ":port" means every address, as for --metrics-listen.
  auto gate = ConnectionGate::Create(
      {.listen = options.listen, .backend = backend, .limits = options.limits});
  if (!gate.ok()) {
    return absl::UnavailableError(absl::StrCat("grpc listen ", options.listen, ": cannot bind (",
                                               gate.status().message(), ")"));
  }
  gate_ = *std::move(gate);
  port_ = gate_->port();
  return absl::OkStatus();
}

void GrpcEdge::Shutdown() {
  if (server_ == nullptr) return;
  server_->GetHealthCheckService()->Shutdown();
  // In-flight calls get half a second to finish, then are cancelled (WatchFindings streams never
  // finish by themselves): SIGTERM must end the agent within 2 s.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  server_->Wait();
  server_.reset();
  gate_.reset();
}

GrpcEdge::~GrpcEdge() { Shutdown(); }

const GrpcEdgeCounters& GrpcEdge::counters() const { return service_->counters(); }

}  // namespace efawatch::rpc
