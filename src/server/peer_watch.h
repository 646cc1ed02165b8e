#pragma once
// Notices a client that hung up while its request is still generating. httplib 0.11 gives
// handlers neither the socket nor a working "peer closed" test (DataSink::is_writable only asks
// whether a write would block), so the connection's fd is found once by its address pair and then
// polled for POLLRDHUP. The fd cannot close or be reused while the handler runs: the HTTP worker
// that owns it is the thread running the handler.
#include <string>

namespace verbatim::server {

class PeerWatch {
 public:
  PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  // True once the client closed its end (or the connection failed). False when unknown.
  bool gone() const;

 private:
  int fd_ = -1;
};

}  // namespace verbatim::server
