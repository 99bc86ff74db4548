// Builds the fuzzers' seed corpus from the JSON files in the repository: one folder per reader.
//
//   fuzz_seed_corpus OUT_DIR FILE...
//
// Files are sorted by their schema tag (profile, cluster, calibration, report) or as Chrome
// traces; a report also seeds the profile, cluster and calibration it embeds, and is cut to
// its first candidates so that every seed stays small (libFuzzer mutates small inputs
// fastest). Files that are no JSON, or larger than kMaxSeedBytes once cut, are skipped.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxSeedBytes = 64 * 1024;
constexpr std::size_t kReportCandidates = 4;

int written = 0;

void writeSeed(const fs::path& out, const std::string& reader, const std::string& name, const std::string& text) {
  if (text.size() > kMaxSeedBytes) return;
  fs::create_directories(out / reader);
  std::ofstream(out / reader / name) << text;
  ++written;
}

std::string schemaOf(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("schema") || !json["schema"].is_string()) return "";
  return json["schema"].get<std::string>();
}

void seedFrom(const fs::path& out, const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return;
  std::string name = file.generic_string();
  for (char& c : name) c = c == '/' ? '_' : c;
  const std::string schema = schemaOf(json);
  if (schema == "pipeprof.profile/v1") writeSeed(out, "profile", name, text.str());
  if (schema == "pipeprof.cluster/v1") writeSeed(out, "cluster", name, text.str());
  if (schema == "pipeprof.calibration/v1") writeSeed(out, "calibration", name, text.str());
  if (schema == "pipeprof.report/v1") {
    for (const char* embedded : {"profile", "cluster", "calibration"}) {
      if (json.contains(embedded) && json[embedded].is_object()) {
        writeSeed(out, embedded, name, json[embedded].dump(1));
      }
    }
    nlohmann::json cut = json;
    if (cut.contains("candidates") && cut["candidates"].is_array() && cut["candidates"].size() > kReportCandidates) {
      cut["candidates"].erase(cut["candidates"].begin() + kReportCandidates, cut["candidates"].end());
      cut.erase("suggestion");  // its indices may point past the cut
    }
    writeSeed(out, "report", name, cut.dump(1));
  }
  if (schema.empty() && (json.is_array() || (json.is_object() && json.contains("traceEvents")))) {
    writeSeed(out, "trace", name, text.str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: fuzz_seed_corpus OUT_DIR FILE...\n";
    return 2;
  }
  const fs::path out = argv[1];
  for (int i = 2; i < argc; ++i) seedFrom(out, argv[i]);
  std::cout << "fuzz_seed_corpus: " << written << " seeds in " << out.string() << "\n";
  return 0;
}
