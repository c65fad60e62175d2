#include "htp-options.h"

#include "proto/hw-model.h"
#include "util/parse-setting.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

namespace hexnpu::hexagon {
namespace {

// Every message names the variable and the value: "GGML_HEXAGON_NHVX='x': ...".
std::invalid_argument bad_value(const char * var, const std::string & value, const std::string & why) {
    return util::bad_setting(var, value, why);
}

// The strict parser shared with the HEXNPU_* variables (src/util/parse-setting.h): a whole decimal
// or 0x-hex number in [min, max], else an error naming the variable, the value and the range.
uint64_t number_option(const char * var, const std::string & value, uint64_t min, uint64_t max) {
    return util::parse_setting(var, value, {min, max});
}

// "HTP<npu>:<session>" -> spec; nullopt when the item does not have that form.
std::optional<htp_device_spec> parse_device_item(std::string_view item) {
    if (item.size() < 3 || (item.substr(0, 3) != "HTP" && item.substr(0, 3) != "htp")) {
        return std::nullopt;
    }
    const std::string_view rest  = item.substr(3);
    const size_t           colon = rest.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const auto npu     = util::parse_decimal(rest.substr(0, colon));
    const auto session = util::parse_decimal(rest.substr(colon + 1));
    if (!npu || !session || *npu > 255 || *session >= HTP_MAX_SESSIONS) {
        return std::nullopt;
    }
    htp_device_spec d;
    d.npu     = uint32_t(*npu);
    d.session = uint32_t(*session);
    d.name    = "HTP" + std::to_string(d.npu) + ":" + std::to_string(d.session);
    return d;
}

// The profile modes upstream knows; a list of 8 PMU event ids also selects the PMU mode (the
// virtual NPU has no PMU: that mode adds the counters the NPU keeps itself, DMA's, to each line).
htp_profile_mode parse_profile(const std::string & value) {
    if (value.find(',') != std::string::npos) {
        size_t n     = 0;
        size_t begin = 0;
        while (begin <= value.size()) {
            const size_t      end  = std::min(value.find(',', begin), value.size());
            const std::string item = value.substr(begin, end - begin);
            const auto        id   = util::parse_number(item);
            if (!id || *id > UINT32_MAX) {
                throw bad_value("GGML_HEXAGON_PROFILE", value,
                                "PMU event id '" + item + "' is not a number in [0, 4294967295] (decimal or 0x hex)");
            }
            ++n;
            begin = end + 1;
        }
        if (n != 8) {
            throw bad_value("GGML_HEXAGON_PROFILE", value, "a PMU event list has 8 comma-separated ids");
        }
        return htp_profile_mode::pmu;
    }
    const uint64_t mode = number_option("GGML_HEXAGON_PROFILE", value, 0, 3);
    return static_cast<htp_profile_mode>(mode);
}

std::invalid_argument bad_device_item(const std::string & text, const std::string & item, const std::string & why) {
    return bad_value("GGML_HEXAGON_DEVICES", text, "bad item '" + item + "' (" + why + ")");
}

// The list's items: split at the commas outside brackets.
std::vector<std::string> device_items(const std::string & text) {
    std::vector<std::string> items(1);
    int                      depth = 0;
    for (char c : text) {
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (c == ',' && depth == 0) {
            items.emplace_back();
        } else {
            items.back() += c;
        }
    }
    return items;
}

// "HTP<n>[<npus>]" or "HTP<n>[<npus>:<session>]": the group's name and its members' specs.
std::pair<std::string, std::vector<htp_device_spec>> parse_group_item(const std::string & text, const std::string & item) {
    const size_t open = item.find('[');
    const auto   n    = item.substr(0, 3) == "HTP" ? util::parse_decimal(std::string_view(item).substr(3, open - 3))
                                                   : std::nullopt;
    if (!n || item.back() != ']' || item.find('[', open + 1) != std::string::npos) {
        throw bad_device_item(text, item, "a group is HTP<n>[<npus>] or HTP<n>[<npus>:<session>], e.g. HTP0[0-1]");
    }
    std::string    inside  = item.substr(open + 1, item.size() - open - 2);
    uint64_t       session = 0;
    if (const size_t colon = inside.find(':'); colon != std::string::npos) {
        const auto s = util::parse_decimal(std::string_view(inside).substr(colon + 1));
        if (!s || *s >= HTP_MAX_SESSIONS) {
            throw bad_device_item(text, item, "the session after ':' must be below " + std::to_string(HTP_MAX_SESSIONS));
        }
        session = *s;
        inside.resize(colon);
    }
    std::vector<htp_device_spec> members;
    for (const std::string & part : device_items(inside)) {
        const size_t dash  = part.find('-');
        const auto   first = util::parse_decimal(std::string_view(part).substr(0, dash));
        const auto   last  = dash == std::string::npos ? first : util::parse_decimal(std::string_view(part).substr(dash + 1));
        if (!first || !last || *first > *last || *last > 255) {
            throw bad_device_item(text, item, "'" + part + "' is not an NPU index or a range a-b of them (at most 255)");
        }
        for (uint64_t npu = *first; npu <= *last; ++npu) {
            members.push_back({"HTP" + std::to_string(npu) + ":" + std::to_string(session), uint32_t(npu), uint32_t(session)});
        }
    }
    if (members.size() < 2) {
        throw bad_device_item(text, item, "a group needs two or more NPUs");
    }
    return {"HTP" + std::to_string(*n), std::move(members)};
}

} // namespace

htp_device_list parse_device_list(const std::string & text) {
    htp_device_list out;
    if (const auto count = util::parse_decimal(text)) {
        if (*count < 1 || *count > HTP_MAX_SESSIONS) {
            throw bad_value("GGML_HEXAGON_DEVICES", text,
                            "a device count must be in [1, " + std::to_string(HTP_MAX_SESSIONS) + "]");
        }
        for (uint32_t i = 0; i < *count; ++i) {
            out.devices.push_back({"HTP0:" + std::to_string(i), 0, i});
        }
        return out;
    }
    std::set<std::string> seen;  // device and group names
    auto add = [&](const std::string & item, const htp_device_spec & spec) {
        if (!seen.insert(spec.name).second) {
            throw bad_value("GGML_HEXAGON_DEVICES", text, "item '" + item + "': '" + spec.name + "' is listed twice");
        }
        out.devices.push_back(spec);
    };
    for (const std::string & item : device_items(text)) {
        if (item.find('[') != std::string::npos) {
            auto [name, members] = parse_group_item(text, item);
            htp_group_spec group{name, {}};
            for (const htp_device_spec & m : members) {
                group.members.push_back(uint32_t(out.devices.size()));
                add(item, m);
            }
            if (!seen.insert(name).second) {
                throw bad_value("GGML_HEXAGON_DEVICES", text, "item '" + item + "': '" + name + "' is listed twice");
            }
            out.groups.push_back(std::move(group));
            continue;
        }
        const auto spec = parse_device_item(item);
        if (!spec) {
            throw bad_value("GGML_HEXAGON_DEVICES", text,
                            "bad item '" + item + "' (expected a count, items HTP<npu>:<session>, session < " +
                                std::to_string(HTP_MAX_SESSIONS) + ", e.g. HTP0:0,HTP0:1, or groups HTP0[0-1])");
        }
        add(item, *spec);
    }
    if (out.devices.size() > HTP_MAX_SESSIONS) {
        throw bad_value("GGML_HEXAGON_DEVICES", text, "more than " + std::to_string(HTP_MAX_SESSIONS) + " sessions");
    }
    return out;
}

uint32_t parse_arch(const std::string & text) {
    const std::string_view digits = !text.empty() && (text[0] == 'v' || text[0] == 'V')
                                        ? std::string_view(text).substr(1)
                                        : std::string_view(text);
    proto::hw_model model{};
    const auto      arch = util::parse_decimal(digits);
    if (!arch || *arch > UINT32_MAX || !proto::hw_model_for_arch(uint32_t(*arch), model)) {
        throw bad_value("GGML_HEXAGON_ARCH", text, "expected one of v73, v75, v79, v81 (or 73, 75, 79, 81)");
    }
    return uint32_t(*arch);
}

uint64_t htp_options::vmem_for_arch(uint32_t arch) const {
    if (vmem) {
        return *vmem;
    }
    return (arch <= 73 ? uint64_t(3000) : uint64_t(3200)) << 20;
}

bool htp_options::filtered_out(const char * op_desc) const {
    return op_filter_re && std::regex_match(op_desc, *op_filter_re);
}

htp_options parse_htp_options(const std::function<const char *(const char *)> & getenv) {
    auto value = [&](const char * var) -> std::optional<std::string> {
        const char * v = getenv(var);
        return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
    };
    htp_options o;
    if (auto v = value("GGML_HEXAGON_DEVICES")) {
        htp_device_list list = parse_device_list(*v);
        o.devices            = std::move(list.devices);
        o.groups             = std::move(list.groups);
    } else if (auto n = value("GGML_HEXAGON_NDEV")) {
        const uint64_t count = number_option("GGML_HEXAGON_NDEV", *n, 1, HTP_MAX_SESSIONS);
        for (uint32_t i = 0; i < count; ++i) {
            o.devices.push_back({"HTP" + std::to_string(i), 0, i});
        }
    } else {
        o.devices.push_back({"HTP0", 0, 0});
    }
    if (auto v = value("GGML_HEXAGON_ARCH")) {
        o.arch = parse_arch(*v);
    }
    if (auto v = value("GGML_HEXAGON_NHVX")) {
        o.n_hvx = uint32_t(number_option("GGML_HEXAGON_NHVX", *v, 0, 64));
    }
    if (auto v = value("GGML_HEXAGON_NHMX")) {
        o.n_hmx = uint32_t(number_option("GGML_HEXAGON_NHMX", *v, 0, 1));
    } else if (auto alias = value("GGML_HEXAGON_USE_HMX")) {
        o.n_hmx = uint32_t(number_option("GGML_HEXAGON_USE_HMX", *alias, 0, 1));
    }
    if (auto v = value("GGML_HEXAGON_MM_SELECT")) {
        o.mm_select = uint32_t(number_option("GGML_HEXAGON_MM_SELECT", *v, 0, 4));
    }
    if (auto v = value("GGML_HEXAGON_FA_SELECT")) {
        o.fa_select = uint32_t(number_option("GGML_HEXAGON_FA_SELECT", *v, 0, 3));
    }
    if (auto v = value("GGML_HEXAGON_GDN_SELECT")) {
        o.gdn_select = uint32_t(number_option("GGML_HEXAGON_GDN_SELECT", *v, 0, 2));
    }
    if (auto v = value("GGML_HEXAGON_VMEM")) {
        o.vmem = number_option("GGML_HEXAGON_VMEM", *v, 0, 4096) << 20;
    }
    if (auto v = value("GGML_HEXAGON_MBUF")) {
        o.max_buffer = number_option("GGML_HEXAGON_MBUF", *v, 1, 4096) << 20;
    }
    if (auto v = value("GGML_HEXAGON_OPBATCH")) {
        o.op_batch = uint32_t(number_option("GGML_HEXAGON_OPBATCH", *v, 1, 1024));
    }
    if (auto v = value("GGML_HEXAGON_OPQUEUE")) {
        o.op_queue = uint32_t(number_option("GGML_HEXAGON_OPQUEUE", *v, 1, 64));
    }
    if (auto v = value("GGML_HEXAGON_OPSTAGE")) {
        o.op_stage = uint32_t(number_option("GGML_HEXAGON_OPSTAGE", *v, 0, 3));
    }
    if (auto v = value("GGML_HEXAGON_HOSTBUF")) {
        o.host_buffers = number_option("GGML_HEXAGON_HOSTBUF", *v, 0, 1) != 0;
    }
    if (auto v = value("GGML_HEXAGON_OPPOLL")) {
        o.op_poll = number_option("GGML_HEXAGON_OPPOLL", *v, 0, 1) != 0;
    }
    if (auto v = value("GGML_HEXAGON_OPFUSION")) {
        o.op_fusion = number_option("GGML_HEXAGON_OPFUSION", *v, 0, 1) != 0;
    }
    if (auto v = value("GGML_HEXAGON_OPTRACE")) {
        o.op_trace = uint32_t(number_option("GGML_HEXAGON_OPTRACE", *v, 1, 1u << 22));
    }
    if (auto v = value("GGML_HEXAGON_VERBOSE")) {
        o.verbose = uint32_t(number_option("GGML_HEXAGON_VERBOSE", *v, 0, 9));
    }
    if (auto v = value("GGML_HEXAGON_FENCE_TIMEOUT")) {
        o.fence_timeout_ms = uint32_t(number_option("GGML_HEXAGON_FENCE_TIMEOUT", *v, 1, 3600000));
    }
    if (auto v = value("GGML_HEXAGON_DMA64")) {
        o.dma64 = number_option("GGML_HEXAGON_DMA64", *v, 0, 1) != 0;
    }
    if (auto v = value("GGML_HEXAGON_AR_SELECT")) {
        o.ar_select = uint32_t(number_option("GGML_HEXAGON_AR_SELECT", *v, 0, 2));
    }
    if (auto v = value("GGML_HEXAGON_PROFILE")) {
        o.profile = parse_profile(*v);
    }
    if (auto v = value("GGML_HEXAGON_OPFILTER")) {
        try {
            o.op_filter_re = std::make_shared<const std::regex>(*v, std::regex::ECMAScript | std::regex::icase);
        } catch (const std::regex_error & e) {
            throw bad_value("GGML_HEXAGON_OPFILTER", *v, std::string("not a regular expression: ") + e.what());
        }
        o.op_filter = *v;
    }
    return o;
}

htp_options htp_options_from_environment() {
    return parse_htp_options([](const char * var) { return std::getenv(var); });
}

} // namespace hexnpu::hexagon
