// Values of every Rust shape rdbx shows in Rust syntax (tests/languages.rs).
#![allow(dead_code)]

#[derive(Debug, Clone, Copy)]
enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Debug)]
enum Shape {
    Circle { r: f64 },
    Square(u32),
    Empty,
}

struct Point {
    x: i32,
    y: i32,
}

struct Pair(i32, u8);

struct Unit;

struct Person {
    age: u32,
    name: String,
    tags: Vec<&'static str>,
}

#[inline(never)]
fn stop_here(n: usize) -> usize {
    n + 1
}

fn main() {
    let point = Point { x: 3, y: -4 };
    let pair = Pair(7, 8);
    let unit = Unit;
    let tuple = (1i32, 2.5f64, 'z');
    let color = Color::Green;
    let circle = Shape::Circle { r: 1.5 };
    let square = Shape::Square(4);
    let empty = Shape::Empty;
    let some = Some(7u8);
    let none: Option<u8> = None;
    let number = 42i32;
    let some_ref: Option<&i32> = Some(&number);
    let none_ref: Option<&i32> = None;
    let ok: Result<i32, String> = Ok(5);
    let err: Result<i32, String> = Err(String::from("bad"));
    let text = "hey";
    let owned = String::from("five");
    let array = [1i32, 2, 3];
    let slice: &[i32] = &array[1..];
    let vector = vec![10i32, 20, 30];
    let zeros = vec![0u64; 12];
    let empty_vec: Vec<i32> = Vec::new();
    let person = Person {
        age: 30,
        name: String::from("Ann"),
        tags: vec!["a", "b"],
    };
    let boxed = Box::new(Point { x: 1, y: 2 });
    let flag = true;
    let sum = stop_here(
        point.x as usize
            + pair.0 as usize
            + tuple.0 as usize
            + color as usize
            + some.unwrap_or(0) as usize
            + text.len()
            + owned.len()
            + slice.len()
            + vector.len()
            + zeros.len()
            + empty_vec.len()
            + person.tags.len()
            + boxed.x as usize
            + usize::from(flag),
    );
    println!(
        "{sum} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        circle,
        square,
        empty,
        none,
        some_ref,
        none_ref,
        (ok, err, unit_name(&unit))
    );
}

fn unit_name(_: &Unit) -> &'static str {
    "unit"
}
