// httplib's server with one read buffer per connection, so that pipelined
// HTTP/1.1 requests are all answered, in order (internal to serve/; includes
// httplib).
//
// httplib 0.11 reads each request of a keep-alive connection through a new
// detail::SocketStream (process_server_socket in httplib.h), whose read-ahead
// buffer (4 KiB) dies with the request: the bytes of a second request that
// arrived in the same read as the first were dropped, the second request was
// never answered, and the client waited for the keep-alive timeout. Here every
// request of a connection is read through one ConnectionStream, whose buffered
// bytes carry over to the next request.
#pragma once
#include <httplib.h>

namespace attn::serve {

class PipelinedServer : public httplib::Server {
private:
  // httplib calls it on a connection thread for every accepted connection:
  // serves its requests (up to the keep-alive count, each within the keep-alive
  // timeout of the previous answer) and closes it.
  bool process_and_close_socket(socket_t sock) override;
};

// Closes the connection once the answer being written on this thread is out:
// for a request refused before its body was read (the unread body must not be
// parsed as the next request). The server calls it for every answer that
// says `Connection: close`.
void close_after_this_answer();

}  // namespace attn::serve
