// C++ names: a namespace and an overloaded function.
namespace calc {
__attribute__((noinline)) int scale(int x) { return x * 2 + 1; }
__attribute__((noinline)) double scale(double x) { return x * 2.5 + 1.0; }
} // namespace calc

int main(int argc, char **)
{
    return calc::scale(argc) + static_cast<int>(calc::scale(1.5 * argc));
}
