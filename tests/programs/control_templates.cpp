// A class template in a namespace: names with spaces and commas inside
// <> for `stop in`, compared with gdb's `break`.
// Used by: real_control.rs (built by the test itself).
#include <cstdio>

namespace geo {
template <typename A, typename B>
struct Pair {
    A a;
    B b;
    __attribute__((noinline)) A first() const
    {
        return a; // MARK:pair_first
    }
};
} // namespace geo

int main()
{
    geo::Pair<int, char> p{7, 'x'};
    geo::Pair<long, double> q{8, 1.5};
    std::printf("%d %ld\n", p.first(), q.first());
    return 0;
}
