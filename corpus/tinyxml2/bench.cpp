// corpus/tinyxml2/bench.cpp: TinyXML-2's benchmark driver for the corpus, compiled with
// tinyxml2.cpp at each commit (build_bench.sh).
//
//     bench MODE FILE ROUNDS
//
// loads FILE into memory once, runs MODE ROUNDS times, prints a checksum of what it
// computed, and exits 1 when a parse fails.  Only API that every commit of the range
// has (TinyXML-2 2.2, 2014) is used.  Modes:
//   parse           XMLDocument::Parse, entities processed, whitespace preserved
//   parse-collapse  Parse with COLLAPSE_WHITESPACE, then without entity processing
//   print           parse once, then XMLPrinter into memory, indented and compact
//   dom             parse once, then walk the elements: FirstChildElement and
//                   NextSiblingElement by name, Attribute, QueryIntAttribute,
//                   QueryDoubleAttribute, GetText
//   edit            parse once, then NewElement, SetAttribute, InsertEndChild,
//                   InsertFirstChild, NewText, DeleteChild on every record
//   clone           parse once, then copy the catalogue into a new document through
//                   ShallowClone, node by node, and print it compact
#include "tinyxml2.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tinyxml2;

static unsigned long long check = 0;

static void mix(unsigned long long v) { check = check * 1099511628211ULL ^ v; }

static void parse(XMLDocument& doc, const std::string& text) {
    if (doc.Parse(text.c_str()) != XML_SUCCESS) {
        std::fprintf(stderr, "bench: parse failed: %d\n", (int)doc.ErrorID());
        std::exit(1);
    }
}

static unsigned long long hash_text(const char* s) {
    unsigned long long h = 0;
    size_t n = std::strlen(s);
    for (size_t i = 0; i < n; i += 61) h = h * 31 + (unsigned char)s[i];
    return h + n;
}

static XMLNode* deep_copy(const XMLNode* from, XMLDocument* into) {
    XMLNode* copy = from->ShallowClone(into);
    for (const XMLNode* child = from->FirstChild(); child; child = child->NextSibling())
        copy->InsertEndChild(deep_copy(child, into));
    return copy;
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
    std::string text;
    char buf[65536];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
    std::fclose(f);

    if (mode == "parse") {
        for (int r = 0; r < rounds; r++) {
            XMLDocument doc;
            parse(doc, text);
            mix(doc.FirstChildElement("catalog")->LastChild() != 0);
        }
    } else if (mode == "parse-collapse") {
        for (int r = 0; r < rounds; r++) {
            XMLDocument doc(true, COLLAPSE_WHITESPACE);
            parse(doc, text);
            mix(hash_text(doc.FirstChildElement("catalog")->FirstChildElement("item")->FirstChildElement("description")->GetText()));
            XMLDocument raw(false);
            parse(raw, text);
            mix(hash_text(raw.FirstChildElement("catalog")->FirstChildElement("item")->FirstChildElement("name")->GetText()));
        }
    } else if (mode == "print") {
        XMLDocument doc;
        parse(doc, text);
        for (int r = 0; r < rounds; r++) {
            XMLPrinter indented;
            doc.Print(&indented);
            mix(hash_text(indented.CStr()));
            XMLPrinter compact(0, true);
            doc.Print(&compact);
            mix(hash_text(compact.CStr()));
        }
    } else if (mode == "dom") {
        XMLDocument doc;
        parse(doc, text);
        XMLElement* catalog = doc.FirstChildElement("catalog");
        for (int r = 0; r < rounds; r++) {
            for (XMLElement* item = catalog->FirstChildElement("item"); item; item = item->NextSiblingElement("item")) {
                int id = 0, stock = 0;
                double price = 0;
                item->QueryIntAttribute("id", &id);
                item->QueryIntAttribute("stock", &stock);
                item->QueryDoubleAttribute("price", &price);
                mix(id + stock + (unsigned long long)(price * 100));
                const char* cat = item->Attribute("category");
                if (cat) mix(std::strlen(cat));
                if (item->Attribute("x:flag", "yes")) mix(1);
                const char* name = item->FirstChildElement("name")->GetText();
                if (name) mix(hash_text(name));
                for (XMLElement* tag = item->FirstChildElement("tags")->FirstChildElement("tag"); tag; tag = tag->NextSiblingElement("tag")) {
                    int w = 0;
                    tag->QueryIntAttribute("weight", &w);
                    mix(w);
                }
                XMLElement* rel = item->FirstChildElement("related");
                if (rel) mix(std::strlen(rel->Attribute("ref")));
            }
        }
    } else if (mode == "edit") {
        XMLDocument doc;
        parse(doc, text);
        XMLElement* catalog = doc.FirstChildElement("catalog");
        for (int r = 0; r < rounds; r++) {
            for (XMLElement* item = catalog->FirstChildElement("item"); item; item = item->NextSiblingElement("item")) {
                XMLElement* added = doc.NewElement("added");
                added->SetAttribute("round", r);
                added->SetAttribute("kind", "edit");
                added->InsertEndChild(doc.NewText("some text"));
                item->InsertEndChild(added);
                XMLElement* first = doc.NewElement("first");
                first->SetAttribute("n", 1);
                item->InsertFirstChild(first);
                item->SetAttribute("stock", r);
            }
            for (XMLElement* item = catalog->FirstChildElement("item"); item; item = item->NextSiblingElement("item")) {
                item->DeleteChild(item->FirstChildElement("added"));
                item->DeleteChild(item->FirstChildElement("first"));
            }
            mix(catalog->FirstChildElement("item")->Attribute("stock") != 0);
        }
    } else if (mode == "clone") {
        XMLDocument doc;
        parse(doc, text);
        for (int r = 0; r < rounds; r++) {
            XMLDocument other;
            other.InsertEndChild(deep_copy(doc.FirstChildElement("catalog"), &other));
            XMLPrinter compact(0, true);
            other.Print(&compact);
            mix(hash_text(compact.CStr()));
        }
    } else {
        std::fprintf(stderr, "bench: unknown mode %s\n", mode.c_str());
        return 2;
    }
    std::printf("%s %d %llu\n", mode.c_str(), rounds, check);
    return 0;
}
