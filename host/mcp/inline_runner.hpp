// A transport whose reading thread may run a request's work itself. The session hands plugin
// work to the worker pool so that the thread reading the client's messages is never held up by
// a call; for a client that waits for each answer, that handoff was a quarter of an echo call
// over stdio (2.5 of 10 us, bench/mcp). An inline_runner lets the reading thread run the work at
// once instead, and sees to it that the reading goes on elsewhere when the work takes long
// (transport/stdio.cpp).
#pragma once

namespace toolhost::mcp {

class inline_runner {
 public:
  virtual ~inline_runner() = default;

  // Called by the session, on the thread handling a message, before that message's work: true
  // when the work may run on this thread now. Then end_inline() follows when it is done. False
  // on any thread but the transport's reading thread, and whenever the work had better go to
  // the workers (more messages already waiting, say).
  virtual bool begin_inline() = 0;
  virtual void end_inline() = 0;
};

}  // namespace toolhost::mcp
