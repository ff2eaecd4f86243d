/* For the annotated source and disassembly tests. Never run: the tests
 * build synthetic experiments whose PCs sit on the lines marked below
 * (found by their marker comments, so the file may be edited freely). */
volatile long sink;

long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) /* LOOP */
		s += i * i;          /* HOT */
	return s;                    /* RETURN */
}

long caller(long n)
{
	long r = work(n); /* CALL */
	return r + 1;
}

int main(void)
{
	sink = caller(1000); /* MAIN-CALL */
	return 0;
}
