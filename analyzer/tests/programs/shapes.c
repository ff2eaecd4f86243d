/* Call shapes for the analyzer's rule tests: direct recursion (I -> R ->
 * R ...), mutual recursion (A -> B -> A ...) and a call through the PLT
 * (say -> puts). Never run: the tests only need its functions' code. */
#include <stdio.h>

int R(int n) { return n <= 0 ? 0 : 1 + R(n - 1); }
int I(void) { return R(5); }
int B(int n);
int A(int n) { return n <= 0 ? 0 : B(n - 1) + 1; }
int B(int n) { return A(n - 1) + 2; }
void say(void) { puts("hello"); }
int main(void)
{
    say();
    return I() + A(4);
}
