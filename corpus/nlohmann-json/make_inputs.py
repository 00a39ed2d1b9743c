#!/usr/bin/env python3
"""Writes the inputs of JSON for Modern C++'s benchmarks (tests/benchmarks/src/benchmarks.cpp)
under OUTPUT/json_test_data, at the paths its json_test_data download would give them, with
generated documents of the same kinds (the download is not reachable here, and its
jeopardy.json is 55 MB: too long under callgrind).  Every number comes from the fixed LCG of
corpus/json_documents.py, written as exact decimal text or Python's shortest repr of a
correctly rounded division, so the bytes do not depend on the platform.
Usage: python3 corpus/nlohmann-json/make_inputs.py OUTPUT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from json_documents import LCG, WORDS, Raw, decimal, encode, records, sentence  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8', newline='\n') as f:
        f.write(text + '\n')


def canada(r):
    """GeoJSON like nativejson-benchmark's canada.json: polygons of coordinates with 15 digits."""
    rings = [[[decimal(r, 15, 13), decimal(r, 15, 13)] for _ in range(400)] for _ in range(15)]
    return {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": "Canada"},
         "geometry": {"type": "Polygon", "coordinates": rings}}]}


def citm(r):
    """Like citm_catalog.json: objects keyed by numeric strings, small integers, nulls, short arrays."""
    events = {}
    for _ in range(300):
        key = str(100000000 + r.below(900000000))
        events[key] = {"description": None, "id": int(key), "logo": None if r.below(2) else "/images/UE0AAAAACEKo%dQAAAAVDSVRN" % r.below(100),
                       "name": sentence(r, 3).rstrip('.\n'), "subTopicIds": [337184269 + r.below(1000) for _ in range(r.below(5))],
                       "subjectCode": None, "subtitle": None, "topicIds": [324846099 + r.below(1000) for _ in range(1 + r.below(3))]}
    performances = [{"eventId": 138586341 + r.below(10000), "id": 339887544 + i, "logo": None, "name": None,
                     "prices": [{"amount": 10000 * (1 + r.below(30)), "audienceSubCategoryId": 337100890, "seatCategoryId": 338937295 + r.below(40)}
                                for _ in range(1 + r.below(4))],
                     "seatCategories": [{"areas": [{"areaId": 205705993 + r.below(200), "blockIds": []} for _ in range(1 + r.below(6))],
                                         "seatCategoryId": 338937295 + r.below(40)} for _ in range(1 + r.below(3))],
                     "seatMapImage": None, "start": 1372701600000 + 3600000 * r.below(5000), "venueCode": "PLEYEL_PLEYEL"}
                    for i in range(250)]
    return {"areaNames": {str(205705993 + i): r.pick(WORDS) for i in range(60)}, "events": events, "performances": performances}


def main():
    out = os.path.join(sys.argv[1], 'json_test_data')
    r = LCG(2022)
    write(f'{out}/jeopardy/jeopardy.json', encode(records(250, 2024), 2))
    write(f'{out}/nativejson-benchmark/canada.json', encode(canada(r), 0))
    write(f'{out}/nativejson-benchmark/citm_catalog.json', encode(citm(r), 2))
    write(f'{out}/nativejson-benchmark/twitter.json', encode(records(150, 99), 1))
    write(f'{out}/regression/floats.json', encode([Raw(repr(r.next() / (1 + r.next()) * 10.0 ** (r.below(40) - 20)))
                                                  for _ in range(6000)], 0))
    write(f'{out}/regression/signed_ints.json', encode([r.next() * 2**33 + r.next() * 4 + r.below(4) - 2**63
                                                       for _ in range(6000)], 0))
    write(f'{out}/regression/unsigned_ints.json', encode([(r.next() * 2**33 + r.next() * 4 + r.below(4)) % 2**64
                                                         for _ in range(6000)], 0))
    write(f'{out}/regression/small_signed_ints.json', encode([r.below(2**24) - 2**23 for _ in range(6000)], 0))


if __name__ == '__main__':
    main()
