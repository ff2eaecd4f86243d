// C++ values rdbx shows like gdb (tests/languages.rs): classes with bases,
// references, this, namespaces.
#include <cstdio>

namespace geo {
int global = 17;

struct Base {
    int b;
};

class Derived : public Base {
  public:
    int d;
    int sum() const;
};

int Derived::sum() const {
    return b + d; // MARK:in_method
}

struct Pt {
    int x;
    int y;
};

struct Shape {
    Pt origin;
    int side;
    int area() const {
        return side * side + origin.x; // MARK:in_shape
    }
};
} // namespace geo

static int use(int &ref, const geo::Derived &obj) {
    return ref + obj.d; // MARK:in_use
}

int main() {
    geo::Derived obj;
    obj.b = 1;
    obj.d = 2;
    int value = 5;
    geo::Shape shape = {{3, 4}, 5};
    int total = use(value, obj) + obj.sum() + geo::global + shape.area();
    std::printf("%d\n", total);
    return 0;
}
