/* A shared library with a __thread variable, for tests/expressions.rs.
 * Built twice: linked into expr_tls_main, and with -Dlib_tls=dl_tls
 * -Dlib_set=dl_set as a library the program dlopen's. */
__thread int lib_tls = 5;
__thread long lib_tls_pair[2] = {6, 7};

void lib_set(int value)
{
    lib_tls = value;
    lib_tls_pair[1] = value * 10L;
}
