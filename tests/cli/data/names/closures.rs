// Rust names as perf shows them, legacy and v0: a trait impl, a generic function with two
// instantiations, and two closures that must stay two rows. Runs for argv[1] milliseconds.
use std::ptr;

trait Shape {
    fn area(&self, n: u64) -> u64;
}
struct Square(u64);
impl Shape for Square {
    #[inline(never)]
    fn area(&self, n: u64) -> u64 {
        let mut acc = 0u64;
        for i in 0..n {
            acc = acc.wrapping_add(opaque(i * self.0));
        }
        acc
    }
}

fn opaque(x: u64) -> u64 {
    let cell = x;
    unsafe { ptr::read_volatile(&cell) }
}

#[inline(never)]
fn generic_sum<T: Copy + Into<u64>>(values: &[T], rounds: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..rounds {
        for x in values.iter() {
            sum = sum.wrapping_add(opaque((*x).into()));
        }
    }
    sum
}

#[inline(never)]
fn apply<F: Fn(u64) -> u64>(f: F, n: u64) -> u64 {
    let mut out = 0;
    for i in 0..n {
        out ^= f(opaque(i));
    }
    out
}

fn main() {
    let milliseconds: u128 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let start = std::time::Instant::now();
    let bytes: Vec<u8> = (0..255).collect();
    let words: Vec<u16> = (0..255).collect();
    let square: Box<dyn Shape> = Box::new(Square(3));
    let k = opaque(7);
    let mut total = 0u64;
    while start.elapsed().as_millis() < milliseconds {
        total ^= generic_sum(&bytes, 200);
        total ^= generic_sum(&words, 200);
        total ^= square.area(50_000);
        total ^= apply(|x| { let mut y = x; for _ in 0..20 { y = opaque(y.wrapping_mul(k) ^ 3); } y }, 2_000);
        total ^= apply(|x| { let mut y = x; for _ in 0..20 { y = opaque(y.wrapping_add(k) << 1); } y }, 2_000);
    }
    println!("{}", total);
}
