#include "attn/serve/connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace attn::serve {
namespace {

thread_local bool close_requested = false;  // close_after_this_answer() on this connection thread

int to_ms(time_t sec, time_t usec) { return int(sec * 1000 + usec / 1000); }

// Whether `events` happen on `fd` within timeout_ms (an error or a hang-up counts:
// the read or write that follows reports it).
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int rc;
  do rc = ::poll(&p, 1, timeout_ms);
  while (rc < 0 && errno == EINTR);
  return rc > 0;
}

void endpoint(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0) return;
  ip = host;
  port = std::atoi(serv);
}

// One connection's bytes for httplib, for the whole connection: what a read
// took from the socket beyond the current request stays for the next one.
class ConnectionStream final : public httplib::Stream {
public:
  ConnectionStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms), buf_(16384) {}

  bool is_readable() const override { return off_ < end_ || wait_for(fd_, POLLIN, read_ms_); }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == end_) {
      if (!wait_for(fd_, POLLIN, read_ms_)) return -1;  // the read timeout
      ssize_t n;
      do n = ::recv(fd_, buf_.data(), buf_.size(), 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      off_ = 0;
      end_ = size_t(n);
    }
    const size_t n = std::min(size, end_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;  // the write timeout
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);  // a client gone: EPIPE, not SIGPIPE
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { endpoint(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { endpoint(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

  // Whether a next request starts within timeout_ms: bytes already buffered (a
  // pipelined request), or arriving. Gives up early when the server stops.
  bool next_request(int timeout_ms, const std::atomic<socket_t>& listening) const {
    if (off_ < end_) return true;
    constexpr int kSlice = 50;  // how soon an idle connection notices stop()
    for (int waited = 0; waited < timeout_ms && listening != INVALID_SOCKET; waited += kSlice) {
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, std::min(kSlice, timeout_ms - waited));
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) return false;
    }
    return false;
  }

private:
  int fd_, read_ms_, write_ms_;
  std::vector<char> buf_;
  size_t off_ = 0, end_ = 0;  // buf_[off_, end_): read from the socket, not yet by httplib
};

}  // namespace

void close_after_this_answer() { close_requested = true; }

bool PipelinedServer::process_and_close_socket(socket_t sock) {
  ConnectionStream strm(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                        to_ms(write_timeout_sec_, write_timeout_usec_));
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!strm.next_request(int(keep_alive_timeout_sec_ * 1000), svr_sock_)) break;
    bool client_closes = false;
    close_requested = false;
    // the last request of the keep-alive count is answered with Connection: close
    ok = process_request(strm, left == 1, client_closes, nullptr);
    if (!ok || client_closes || close_requested) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace attn::serve
