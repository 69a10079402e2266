// The binary dumps the host checks and the Rust tests exchange (scripts/cu-on-host.sh): little-endian arrays of T,
// read whole and written whole. Shared by the one-thread vocabulary (cu-host.h) and the block one's users.
#pragma once
#include <string.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
// A dump as an array of T (empty where the file cannot be read: the caller's size checks say so).
template <typename T> std::vector<T> load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<T> v(s.size() / sizeof(T));
    memcpy(v.data(), s.data(), v.size() * sizeof(T));
    return v;
}
template <typename T> void save(const std::string& path, const std::vector<T>& v) {
    std::ofstream f(path, std::ios::binary);
    f.write((const char*)v.data(), v.size() * sizeof(T));
}
