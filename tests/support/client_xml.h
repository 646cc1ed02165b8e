#pragma once
// A strict little XML reader for tests that must prove a file is well-formed XML (the SVG plot):
// one root, matched tags, quoted attributes, known entities. Throws std::runtime_error with the
// offset on anything malformed.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace verbatim::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;  // entities decoded
  std::vector<std::unique_ptr<XmlElement>> children;
  std::string text;                          // character data directly inside, entities decoded

  std::vector<const XmlElement*> find_all(const std::string& tag) const;  // every descendant named tag
};

std::unique_ptr<XmlElement> parse_xml(const std::string& doc);

}  // namespace verbatim::test
