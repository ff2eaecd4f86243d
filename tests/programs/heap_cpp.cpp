// C++ allocations through operator new/delete (which call malloc/free):
// 5 leaked Node objects from grow_list, a vector's buffer kept by a global,
// 100 new/delete pairs in churn. Prints "done".
#include <cstdio>
#include <vector>

struct Node {
    Node *next;
    long value[5];
};

std::vector<long> *kept;

__attribute__((noinline)) Node *grow_list()
{
    Node *head = nullptr;
    for (int i = 0; i < 5; i++) {
        Node *n = new Node();
        n->next = head;
        head = n;
    }
    return head;
}

__attribute__((noinline)) void churn()
{
    for (int i = 0; i < 100; i++) {
        Node *n = new Node();
        delete n;
    }
}

int main()
{
    Node *volatile list = grow_list();
    (void)list;
    churn();
    kept = new std::vector<long>(1000, 7);
    std::puts("done");
    return 0;
}
