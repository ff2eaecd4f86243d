// C++ waits known by construction: std::mutex held 40 ms by another thread,
// a std::condition_variable notified after 30 ms, a std::thread joined after
// it slept 20 ms. Each is measured here with steady_clock and printed as
// `wait KIND NS FUNCTION` on stderr.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

using Clock = std::chrono::steady_clock;

static long long since(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

static std::mutex held;

__attribute__((noinline)) void wait_for_mutex() {
    std::mutex taken;
    std::thread holder([] {
        std::lock_guard<std::mutex> hold(held);
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto start = Clock::now();
    {
        std::lock_guard<std::mutex> mine(held);
        std::fprintf(stderr, "wait mutex %lld wait_for_mutex\n", since(start));
    }
    holder.join();
}

__attribute__((noinline)) void wait_for_condition() {
    std::mutex lock;
    std::condition_variable ready;
    bool done = false;
    std::thread notifier([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        std::lock_guard<std::mutex> hold(lock);
        done = true;
        ready.notify_one();
    });
    std::unique_lock<std::mutex> mine(lock);
    auto start = Clock::now();
    while (!done)
        ready.wait(mine);
    std::fprintf(stderr, "wait cond %lld wait_for_condition\n", since(start));
    mine.unlock();
    notifier.join();
}

__attribute__((noinline)) void wait_for_thread() {
    std::thread sleeper([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
    auto start = Clock::now();
    sleeper.join();
    std::fprintf(stderr, "wait join %lld wait_for_thread\n", since(start));
}

int main() {
    wait_for_mutex();
    wait_for_condition();
    wait_for_thread();
    std::puts("done");
    return 0;
}
