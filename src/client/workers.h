#pragma once
// Runs `count` items on `users` threads that start together and each take the next item when
// their last one is done (closed-loop clients, as the seed page's "N users at once"). The first
// failure stops the others from starting new items and is rethrown after every thread joined.
#include <functional>

namespace verbatim::client {

void run_users(int users, int count, const std::function<void(int user, int item)>& work,
               const std::function<void(int done)>& on_progress);

}  // namespace verbatim::client
