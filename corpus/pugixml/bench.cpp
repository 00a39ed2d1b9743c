// corpus/pugixml/bench.cpp: pugixml's benchmark driver for the corpus, compiled with
// src/pugixml.cpp at each commit (build_bench.sh).
//
//     bench MODE FILE ROUNDS
//
// loads FILE into memory once, runs MODE ROUNDS times, prints a checksum of what it
// computed, and exits 1 when a parse fails.  Only API of pugixml 1.2 (2012), which every
// commit of the range has, is used.  Modes:
//   parse         xml_document::load_buffer with parse_default
//   parse-full    load_buffer with parse_full (declaration, doctype, comments, PIs,
//                 whitespace-only PCDATA) and then with parse_minimal
//   save          parse once, then save with indentation and raw (format_raw), and
//                 print one subtree, into a writer that counts and hashes the bytes
//   xpath         parse once, then eleven compiled XPath queries (paths, predicates,
//                 position(), count(), sum(), string functions, unions, sorting)
//   dom           parse once, then walk the tree (children, attributes, child(name),
//                 find_child_by_attribute, text values as numbers), and edit it
//                 (append, insert, remove children and attributes)
//   copy          parse once, then copy the whole catalogue under a new document
//                 (append_copy) and remove it again
#include "pugixml.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static unsigned long long check = 0;

static void mix(unsigned long long v) { check = check * 1099511628211ULL ^ v; }

struct counting_writer : pugi::xml_writer {
    virtual void write(const void* data, size_t size) {
        const unsigned char* p = static_cast<const unsigned char*>(data);
        unsigned long long h = size;
        for (size_t i = 0; i < size; i += 61) h = h * 31 + p[i];
        mix(h);
    }
};

static void load(pugi::xml_document& doc, const std::vector<char>& data, unsigned int options) {
    pugi::xml_parse_result r = doc.load_buffer(&data[0], data.size(), options);
    if (!r) {
        std::fprintf(stderr, "bench: parse failed: %s at %ld\n", r.description(), (long)r.offset);
        std::exit(1);
    }
}

static unsigned long long count_nodes(pugi::xml_node n) {
    unsigned long long c = 1;
    for (pugi::xml_attribute a = n.first_attribute(); a; a = a.next_attribute()) c += std::strlen(a.value());
    for (pugi::xml_node ch = n.first_child(); ch; ch = ch.next_sibling()) c += count_nodes(ch);
    return c;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: bench MODE FILE ROUNDS\n");
        return 2;
    }
    std::string mode = argv[1];
    int rounds = std::atoi(argv[3]);
    std::FILE* f = std::fopen(argv[2], "rb");
    if (!f) {
        std::perror(argv[2]);
        return 1;
    }
    std::vector<char> data;
    char buf[65536];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + got);
    std::fclose(f);

    if (mode == "parse") {
        for (int r = 0; r < rounds; r++) {
            pugi::xml_document doc;
            load(doc, data, pugi::parse_default);
            mix(doc.child("catalog").last_child().attribute("id").as_int());
        }
    } else if (mode == "parse-full") {
        for (int r = 0; r < rounds; r++) {
            pugi::xml_document doc;
            load(doc, data, pugi::parse_full);
            mix(std::strlen(doc.last_child().last_child().child("name").child_value()));
            pugi::xml_document doc2;
            load(doc2, data, pugi::parse_minimal);
            mix(std::strlen(doc2.last_child().name()));
        }
    } else if (mode == "save") {
        pugi::xml_document doc;
        load(doc, data, pugi::parse_default | pugi::parse_comments);
        counting_writer w;
        for (int r = 0; r < rounds; r++) {
            doc.save(w, "  ");
            doc.save(w, "", pugi::format_raw);
            doc.child("catalog").first_child().print(w, "\t", pugi::format_default);
        }
    } else if (mode == "xpath") {
        pugi::xml_document doc;
        load(doc, data, pugi::parse_default);
        static const char* const queries[] = {
            "/catalog/item[@category = 'alpha']/name",
            "//item[@price > 250][@stock < 100]",
            "//tag[. = 'river']/../..",
            "count(//item[tags/tag/@weight > 7])",
            "sum(//item/@stock)",
            "//item[position() mod 50 = 0]/@id",
            "//item[last()]/name | //item[1]/name",
            "//item[contains(name, 'stone') and starts-with(@category, 'g')]",
            "//item[string-length(normalize-space(description)) > 60]/@id",
            "//related[@ref = ../@id]",
            "translate(/catalog/item[3]/name, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')",
        };
        std::vector<pugi::xpath_query*> compiled;
        for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++)
            compiled.push_back(new pugi::xpath_query(queries[i]));
        for (int r = 0; r < rounds; r++) {
            for (size_t i = 0; i < compiled.size(); i++) {
                pugi::xpath_query& q = *compiled[i];
                if (q.return_type() == pugi::xpath_type_node_set) {
                    pugi::xpath_node_set s = q.evaluate_node_set(doc);
                    mix(s.size());
                } else if (q.return_type() == pugi::xpath_type_number) {
                    mix((unsigned long long)q.evaluate_number(doc));
                } else {
                    mix(q.evaluate_string(doc).size());
                }
            }
        }
        for (size_t i = 0; i < compiled.size(); i++) delete compiled[i];
    } else if (mode == "dom") {
        pugi::xml_document doc;
        load(doc, data, pugi::parse_default);
        pugi::xml_node catalog = doc.child("catalog");
        for (int r = 0; r < rounds; r++) {
            mix(count_nodes(catalog));
            for (pugi::xml_node item = catalog.child("item"); item; item = item.next_sibling("item")) {
                mix(item.attribute("id").as_int() + (unsigned long long)(item.attribute("price").as_double() * 100));
                mix(std::strlen(item.child("name").child_value()));
                pugi::xml_node tags = item.child("tags");
                pugi::xml_node t = tags.find_child_by_attribute("tag", "weight", "3");
                if (t) mix(std::strlen(t.child_value()));
                pugi::xml_node added = item.append_child("added");
                added.append_attribute("round") = r;
                added.append_child(pugi::node_pcdata).set_value("text");
                item.insert_child_before("first", item.first_child()).append_attribute("n") = "1";
            }
            for (pugi::xml_node item = catalog.child("item"); item; item = item.next_sibling("item")) {
                item.remove_child("added");
                item.remove_child("first");
                item.attribute("stock").set_value(r);
            }
        }
    } else if (mode == "copy") {
        pugi::xml_document doc;
        load(doc, data, pugi::parse_default | pugi::parse_comments);
        for (int r = 0; r < rounds; r++) {
            pugi::xml_document other;
            pugi::xml_node root = other.append_child("copies");
            for (int k = 0; k < 2; k++) root.append_copy(doc.child("catalog"));
            mix(count_nodes(root.last_child()));
            root.remove_child(root.first_child());
            mix(count_nodes(root));
        }
    } else {
        std::fprintf(stderr, "bench: unknown mode %s\n", mode.c_str());
        return 2;
    }
    std::printf("%s %d %llu\n", mode.c_str(), rounds, check);
    return 0;
}
