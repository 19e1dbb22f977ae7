//! `strads`: the launcher of strads programs (`strads run -n N -- prog args`).

fn main() {
    eprintln!("strads: the launcher is not built yet");
    std::process::exit(2);
}
