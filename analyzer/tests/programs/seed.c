/* The call tree of the worked example of the manual's "How Metrics Are
 * Assigned to Program Structure" (main, A, B, C, E, F, G).
 * Never run: the analyzer tests only need its functions' addresses to
 * build a synthetic experiment whose PCs symbolize to these names. */
long queue_lock[5]; /* a data symbol: names a sync object in the tests */
void G(int n) { (void)n; }
void E(int n) { (void)n; }
void F(int n) { G(n / 2); }
void C(int n) { E(n); F(n); }
void A(void) { C(10); }
void B(void) { C(15); }
int main(void) { A(); B(); return 0; }
