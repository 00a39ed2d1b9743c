// A library in a versioned inline namespace, as nlohmann/json (json_abi_v3_11_2) and {fmt}
// (v10) put theirs: a release renames every symbol in it.  The tests compile it with the
// namespace's name and the scale given by -D (LIB_ABI, SCALE).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef LIB_ABI
#define LIB_ABI json_abi_v3_11_2
#endif
#ifndef SCALE
#define SCALE 3
#endif

namespace lib {
inline namespace LIB_ABI {

struct Ledger {
    std::vector<long> entries;
    std::string label;
    void add(long value);
    long total() const;
};

__attribute__((noinline)) void Ledger::add(long value) { entries.push_back(value * SCALE); }

__attribute__((noinline)) long Ledger::total() const {
    long sum = 0;
    for (long entry : entries) sum += entry;
    return sum + static_cast<long>(label.size());
}

template <class T>
__attribute__((noinline)) T doubled(T x) { return x + x; }

// RTTI: its typeinfo name is the mangled name as a string, version and all
struct ledger_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

__attribute__((noinline)) long checked(long value) {
    if (value < 0) throw ledger_error("negative");
    return value;
}

}  // namespace LIB_ABI
}  // namespace lib

int main(int argc, char **argv) {
    long count = argc > 1 ? std::atol(argv[1]) : 20000;
    lib::Ledger ledger;
    ledger.label = "ledger";
    for (long i = 0; i < count; ++i) ledger.add(lib::doubled(i));
    // std::map's tree functions carry the namespace in their template arguments
    std::map<std::string, lib::Ledger> books;
    books["main"] = ledger;
    try {
        return std::printf("%ld\n", lib::checked(books["main"].total() - 1)) < 0;
    } catch (const lib::ledger_error &error) {
        std::puts(error.what());
        return 1;
    }
}
