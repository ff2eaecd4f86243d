// C++ file I/O known by construction, for tests/io.rs. Usage: io_cpp DIR.
// In DIR:
// - write_text: an std::ofstream writes `text`, 100 write()s of 100 bytes
//   and "end\n": 10004 bytes;
// - copy_text: an std::ifstream of `text` copied into an std::ofstream of
//   `copy` (operator<< of its rdbuf): 10004 bytes read and written;
// - read_lines: `text` read again to its end with std::getline: 10004;
// - update_data: an std::fstream writes 3000 bytes to `data`, seeks back
//   to its start and reads them.
// libstdc++'s filebuf opens and closes with fopen and fclose and moves the
// bytes with read, write and writev on the descriptor, through its own
// buffer: fewer, larger calls than the program's. On stdout, through
// std::cout (fwrite): "lines 101" and "done".
#include <fstream>
#include <iostream>
#include <string>

static std::string dir;

static std::string path(const char *name) { return dir + "/" + name; }

__attribute__((noinline)) void write_text() {
    std::ofstream out(path("text"));
    std::string chunk(99, 't');
    chunk += '\n';
    for (int i = 0; i < 100; i++) {
        out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    }
    out << "end\n";
}

__attribute__((noinline)) void copy_text() {
    std::ifstream in(path("text"));
    std::ofstream out(path("copy"));
    out << in.rdbuf();
}

__attribute__((noinline)) long read_lines() {
    std::ifstream in(path("text"));
    std::string line;
    long lines = 0;
    while (std::getline(in, line)) {
        lines++;
    }
    return lines;
}

__attribute__((noinline)) bool update_data() {
    std::fstream data(path("data"), std::ios::in | std::ios::out | std::ios::trunc);
    std::string block(3000, 'd');
    data.write(block.data(), static_cast<std::streamsize>(block.size()));
    data.seekg(0);
    std::string back(3000, '\0');
    data.read(&back[0], static_cast<std::streamsize>(back.size()));
    return data.gcount() == 3000 && back == block;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << "usage: io_cpp DIR\n";
        return 2;
    }
    dir = argv[1];
    write_text();
    copy_text();
    long lines = read_lines();
    if (!update_data()) {
        return 1;
    }
    std::cout << "lines " << lines << "\n";
    std::cout << "done\n";
    return 0;
}
