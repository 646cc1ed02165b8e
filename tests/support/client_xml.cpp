#include "support/client_xml.h"

#include <cctype>
#include <stdexcept>

namespace verbatim::test {

namespace {

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}

  std::unique_ptr<XmlElement> document() {
    skip_space();
    if (starts("<?xml")) {
      size_t end = s_.find("?>", i_);
      if (end == std::string::npos) fail("unclosed XML declaration");
      i_ = end + 2;
    }
    skip_misc();
    auto root = element();
    skip_misc();
    if (i_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw std::runtime_error("XML: " + why + " at offset " + std::to_string(i_)); }
  bool starts(const char* p) const { return s_.compare(i_, std::char_traits<char>::length(p), p) == 0; }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        size_t end = s_.find("-->", i_);
        if (end == std::string::npos) fail("unclosed comment");
        i_ = end + 3;
      } else {
        return;
      }
    }
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
  }
  std::string name() {
    size_t b = i_;
    if (i_ >= s_.size() || !(std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) fail("expected a name");
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }
  std::string decode(const std::string& raw) {
    std::string out;
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '<') fail("'<' in text or attribute");
      if (raw[k] != '&') {
        out += raw[k];
        continue;
      }
      size_t semi = raw.find(';', k);
      if (semi == std::string::npos) fail("unterminated entity");
      std::string ent = raw.substr(k + 1, semi - k - 1);
      if (ent == "amp") out += '&';
      else if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (!ent.empty() && ent[0] == '#') out += '?';
      else fail("unknown entity &" + ent + ";");
      k = semi;
    }
    return out;
  }
  std::unique_ptr<XmlElement> element() {
    if (i_ >= s_.size() || s_[i_] != '<') fail("expected '<'");
    ++i_;
    auto e = std::make_unique<XmlElement>();
    e->name = name();
    for (;;) {
      bool had_space = i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]));
      skip_space();
      if (i_ >= s_.size()) fail("unclosed start tag <" + e->name);
      if (starts("/>")) {
        i_ += 2;
        return e;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      if (!had_space) fail("attributes must be separated by space");
      std::string an = name();
      skip_space();
      if (i_ >= s_.size() || s_[i_] != '=') fail("expected '=' after attribute " + an);
      ++i_;
      skip_space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("attribute " + an + " is not quoted");
      char q = s_[i_++];
      size_t end = s_.find(q, i_);
      if (end == std::string::npos) fail("unclosed attribute value");
      if (e->attrs.count(an)) fail("duplicate attribute " + an);
      e->attrs[an] = decode(s_.substr(i_, end - i_));
      i_ = end + 1;
    }
    for (;;) {
      if (i_ >= s_.size()) fail("unclosed element <" + e->name + ">");
      if (starts("</")) {
        i_ += 2;
        std::string n = name();
        if (n != e->name) fail("</" + n + "> closes <" + e->name + ">");
        skip_space();
        if (i_ >= s_.size() || s_[i_] != '>') fail("expected '>'");
        ++i_;
        return e;
      }
      if (starts("<!--")) {
        skip_misc();
        continue;
      }
      if (s_[i_] == '<') {
        e->children.push_back(element());
        continue;
      }
      size_t next = s_.find('<', i_);
      if (next == std::string::npos) fail("text runs to the end");
      e->text += decode(s_.substr(i_, next - i_));
      i_ = next;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

void collect(const XmlElement& e, const std::string& tag, std::vector<const XmlElement*>& out) {
  for (const auto& c : e.children) {
    if (c->name == tag) out.push_back(c.get());
    collect(*c, tag, out);
  }
}

}  // namespace

std::vector<const XmlElement*> XmlElement::find_all(const std::string& tag) const {
  std::vector<const XmlElement*> out;
  collect(*this, tag, out);
  return out;
}

std::unique_ptr<XmlElement> parse_xml(const std::string& doc) { return Reader(doc).document(); }

}  // namespace verbatim::test
