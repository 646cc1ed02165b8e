#include "server/peer_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace verbatim::server {
namespace {

// "ip:port" of a socket address, in the form httplib reports (inet_ntop, numeric port).
bool same_endpoint(const sockaddr_storage& a, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  int p = -1;
  if (a.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    p = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    p = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  return p == port && addr == buf;
}

}  // namespace

PeerWatch::PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  if (remote_port <= 0 || local_port <= 0) return;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t pl = sizeof peer, sl = sizeof self;
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (!same_endpoint(peer, remote_addr, remote_port)) continue;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&self), &sl) != 0) continue;
    if (!same_endpoint(self, local_addr, local_port)) continue;
    fd_ = int(fd);
    break;
  }
  closedir(d);
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace verbatim::server
