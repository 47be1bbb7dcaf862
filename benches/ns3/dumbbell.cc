// ccfair's benchmark dumbbell (BBR vs CUBIC) written for ns-3, to time ns-3 on the same
// scenario as `ccfair.run()` (issue 16; benches/README.md, "Against ns-3").
//
// Topology, as ccfair's `dumbbell(2, ["bbr", "cubic"], bottleneck_delay=D, buffer_bdp=alpha)`
// resolves it (docs/spec.md, "Buffers and the BDP"):
//
//   h1 --1G,1ms-- s1 --50M,D-- s2 --1G,1ms-- h3     flow1: h1 -> h3, BBR
//   h2 --1G,1ms--/            \--1G,1ms-- h4        flow2: h2 -> h4, CUBIC
//
// D is the bottleneck's one-way delay, so RTT = 2 x (1 + D + 1) ms. The bottleneck holds
// max(1, floor(alpha x BDP_pkts + 0.5)) packets per direction, BDP_pkts = 50e6 x RTT /
// (8 x 1500), counting the packet in service (ns-3's device queue holds only waiting
// packets, so it gets one less); access links hold 1000. No queue disc: the device queue is
// the drop-tail buffer. Bulk senders from t = 0 with a handshake; goodput is what each sink
// received over [0, duration).
//
// Prints one JSON object on stdout: the parameters, buffer sizes, the build profile of the
// ns-3 libraries, per-flow goodput (Mbit/s) and share, bottleneck drops, events executed and
// the samples taken.
//
// Build: benches/ns3/build.sh. Run: dumbbell --delay-ms=18 --alpha=2 --duration-s=60

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

constexpr double kBottleneckBps = 50e6;
constexpr double kAccessDelayMs = 1.0;
constexpr uint32_t kMss = 1448;        // 1500 B IP packets with the timestamps option
constexpr uint32_t kWirePacket = 1500; // the packet size BDPs are counted in
constexpr uint32_t kAccessBufferPkts = 1000;

struct Sampler
{
    std::vector<Ptr<PacketSink>> sinks;
    Ptr<Queue<Packet>> bottleneckQueue;
    Time interval;
    // Per sample: each flow's received bytes, then the bottleneck's queue length.
    std::vector<uint64_t> rows;
    uint64_t samples = 0;

    void Take()
    {
        for (const auto& s : sinks)
        {
            rows.push_back(s->GetTotalRx());
        }
        rows.push_back(bottleneckQueue->GetNPackets());
        ++samples;
        Simulator::Schedule(interval, &Sampler::Take, this);
    }
};

uint64_t g_forwarded = 0; // data packets s1 forwarded towards the receivers
uint64_t g_macTx = 0;     // packets the bottleneck device accepted
uint64_t g_macTxDrop = 0; // packets the bottleneck device's queue refused
std::vector<Ipv4Address> g_receivers; // h3's and h4's addresses

void
CountForward(const Ipv4Header& h, Ptr<const Packet>, uint32_t)
{
    for (const auto& a : g_receivers)
    {
        if (h.GetDestination() == a)
        {
            ++g_forwarded;
        }
    }
}

void
CountMacTx(Ptr<const Packet>)
{
    ++g_macTx;
}

void
CountMacTxDrop(Ptr<const Packet>)
{
    ++g_macTxDrop;
}

void
Die(const std::string& msg)
{
    std::cerr << "dumbbell: " << msg << std::endl;
    std::exit(2);
}

Ptr<Queue<Packet>>
DeviceQueue(Ptr<NetDevice> dev)
{
    return DynamicCast<PointToPointNetDevice>(dev)->GetQueue();
}

void
SetDeviceQueue(Ptr<NetDevice> dev, uint32_t bufferPkts)
{
    // ccfair's buffer counts the packet being serialised; ns-3's device queue does not. A
    // device queue cannot be empty, so a 1-packet buffer becomes 2 (main() warns).
    uint32_t waiting = std::max<uint32_t>(1, bufferPkts - 1);
    DeviceQueue(dev)->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, waiting));
}

TypeId
CcaType(const std::string& name)
{
    if (name == "bbr")
    {
        return TcpBbr::GetTypeId();
    }
    if (name == "cubic")
    {
        return TcpCubic::GetTypeId();
    }
    if (name == "newreno")
    {
        return TcpNewReno::GetTypeId();
    }
    Die("unknown congestion control '" + name + "' (bbr, cubic or newreno)");
    return TypeId();
}

} // namespace

int
main(int argc, char* argv[])
{
    double delayMs = 18.0;
    double alpha = 2.0;
    double durationS = 60.0;
    double sampleMs = 10.0;
    uint32_t seed = 1;
    uint32_t run = 1;
    uint32_t sendSize = 64 * 1024;
    std::string cca1 = "bbr";
    std::string cca2 = "cubic";
    std::string samplesCsv;

    // TCP as ccfair's defaults have it (Linux's), set before parsing so that any ns-3
    // attribute can still be overridden on the command line (--ns3::TcpSocket::...=...).
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kMss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));

    CommandLine cmd(__FILE__);
    cmd.AddValue("delay-ms", "bottleneck one-way delay D (ms), > 0", delayMs);
    cmd.AddValue("alpha", "bottleneck buffer in BDPs of flow1's path, > 0", alpha);
    cmd.AddValue("duration-s", "simulated time (s), > 0", durationS);
    cmd.AddValue("sample-ms", "sampling interval of goodput and queue (ms); 0: none", sampleMs);
    cmd.AddValue("seed", "ns-3 RNG seed", seed);
    cmd.AddValue("run", "ns-3 RNG run number", run);
    cmd.AddValue("send-size", "bytes per application write", sendSize);
    cmd.AddValue("cca1", "flow1's congestion control: bbr, cubic or newreno", cca1);
    cmd.AddValue("cca2", "flow2's congestion control: bbr, cubic or newreno", cca2);
    cmd.AddValue("samples-csv", "write the samples to this CSV file", samplesCsv);
    cmd.Parse(argc, argv);

    if (!(delayMs > 0 && std::isfinite(delayMs)))
    {
        Die("--delay-ms must be a finite number > 0");
    }
    if (!(alpha > 0 && std::isfinite(alpha)))
    {
        Die("--alpha must be a finite number > 0");
    }
    if (!(durationS > 0 && std::isfinite(durationS)))
    {
        Die("--duration-s must be a finite number > 0");
    }
    if (!(sampleMs >= 0 && std::isfinite(sampleMs)))
    {
        Die("--sample-ms must be a finite number >= 0");
    }
    if (sendSize == 0)
    {
        Die("--send-size must be >= 1");
    }

    // The buffer as ccfair resolves `buffer = { bdp = alpha, reference = "flow1" }` (ccfair
    // computes in exact decimals, this in doubles: they could differ only at an exact half).
    const double rttS = 2.0 * (kAccessDelayMs + delayMs + kAccessDelayMs) / 1e3;
    const double bdpPkts = kBottleneckBps * rttS / (8.0 * kWirePacket);
    const uint32_t bufferPkts =
        static_cast<uint32_t>(std::max(1.0, std::floor(alpha * bdpPkts + 0.5)));
    // ccfair's "fit" socket buffers: 4 x (BDP bytes + every buffer on the path), in
    // [8 MiB, 1 GiB], so that no window limits a flow.
    const double pathBufBytes = (2.0 * kAccessBufferPkts + bufferPkts) * kWirePacket;
    const double fit = 4.0 * (kBottleneckBps * rttS / 8.0 + pathBufBytes);
    const uint32_t sockBuf =
        static_cast<uint32_t>(std::clamp(fit, double(8u << 20), double(1u << 30)));

    if (bufferPkts == 1)
    {
        std::cerr << "dumbbell: warning: a 1-packet bottleneck buffer holds 2 packets here"
                  << std::endl;
    }
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockBuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockBuf));
    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(run);

    // Nodes in ccfair's order: h1 h2 s1 s2 h3 h4.
    NodeContainer nodes;
    nodes.Create(6);
    Ptr<Node> h1 = nodes.Get(0), h2 = nodes.Get(1), s1 = nodes.Get(2), s2 = nodes.Get(3);
    Ptr<Node> h3 = nodes.Get(4), h4 = nodes.Get(5);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(kAccessDelayMs)));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(kBottleneckBps)));
    bottleneck.SetChannelAttribute("Delay", TimeValue(NanoSeconds(std::llround(delayMs * 1e6))));

    NetDeviceContainer l0 = access.Install(h1, s1);
    NetDeviceContainer l1 = access.Install(h2, s1);
    NetDeviceContainer lb = bottleneck.Install(s1, s2);
    NetDeviceContainer l3 = access.Install(s2, h3);
    NetDeviceContainer l4 = access.Install(s2, h4);

    InternetStackHelper stack;
    stack.Install(nodes);

    Ipv4AddressHelper addr;
    std::vector<Ipv4InterfaceContainer> ifs;
    int subnet = 1;
    for (const auto& link : {l0, l1, lb, l3, l4})
    {
        std::ostringstream net;
        net << "10.0." << subnet++ << ".0";
        addr.SetBase(net.str().c_str(), "255.255.255.0");
        ifs.push_back(addr.Assign(link));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Assign() installs pfifo_fast (1000 packets) on every device; take it away so that the
    // device queue alone is the drop-tail buffer of ccfair's link.
    TrafficControlHelper tch;
    for (const auto& link : {l0, l1, lb, l3, l4})
    {
        tch.Uninstall(link);
    }
    for (const auto& link : {l0, l1, l3, l4})
    {
        SetDeviceQueue(link.Get(0), kAccessBufferPkts);
        SetDeviceQueue(link.Get(1), kAccessBufferPkts);
    }
    SetDeviceQueue(lb.Get(0), bufferPkts);
    SetDeviceQueue(lb.Get(1), bufferPkts);
    // Bottleneck drops (a sanity figure): with no queue disc, a packet forwarded while the
    // device queue is full is dropped silently by the traffic-control layer (the queue is
    // "stopped"), so count the data packets s1 forwards towards s2 and those the device
    // accepts (MacTx; MacTxDrop if its queue refused one).
    bool traced = s1->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext(
        "UnicastForward",
        MakeCallback(&CountForward));
    traced &= lb.Get(0)->TraceConnectWithoutContext("MacTx", MakeCallback(&CountMacTx));
    traced &= lb.Get(0)->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&CountMacTxDrop));
    if (!traced)
    {
        Die("internal: a trace source is missing");
    }
    g_receivers = {ifs[3].GetAddress(1), ifs[4].GetAddress(1)};

    // Per-sender congestion control: by default BBR on h1 (TcpBbr turns pacing on for its
    // own socket) and CUBIC on h2 (not paced, as Linux without fq).
    Config::Set("/NodeList/0/$ns3::TcpL4Protocol/SocketType", TypeIdValue(CcaType(cca1)));
    Config::Set("/NodeList/1/$ns3::TcpL4Protocol/SocketType", TypeIdValue(CcaType(cca2)));

    const uint16_t port = 5000;
    const Time stop = Seconds(durationS);
    struct FlowDef
    {
        const char* name;
        std::string cca;
        Ptr<Node> src;
        Ptr<Node> dst;
        Ipv4Address dstAddr;
    };
    std::vector<FlowDef> flows = {
        {"flow1", cca1, h1, h3, ifs[3].GetAddress(1)},
        {"flow2", cca2, h2, h4, ifs[4].GetAddress(1)},
    };
    Sampler sampler;
    for (const auto& f : flows)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(f.dst);
        sinkApp.Start(Seconds(0));
        sinkApp.Stop(stop);
        sampler.sinks.push_back(DynamicCast<PacketSink>(sinkApp.Get(0)));

        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(f.dstAddr, port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(sendSize));
        ApplicationContainer srcApp = src.Install(f.src);
        srcApp.Start(Seconds(0));
        srcApp.Stop(stop);
    }
    sampler.bottleneckQueue = DeviceQueue(lb.Get(0));
    if (sampleMs > 0)
    {
        sampler.interval = MicroSeconds(std::llround(sampleMs * 1e3));
        Simulator::Schedule(sampler.interval, &Sampler::Take, &sampler);
    }

    Simulator::Stop(stop);
    Simulator::Run();

    std::vector<double> goodput;
    double total = 0;
    for (const auto& s : sampler.sinks)
    {
        double mbps = s->GetTotalRx() * 8.0 / durationS / 1e6;
        goodput.push_back(mbps);
        total += mbps;
    }
    const uint64_t events = Simulator::GetEventCount();
    if (!samplesCsv.empty())
    {
        std::FILE* f = std::fopen(samplesCsv.c_str(), "w");
        if (!f)
        {
            Die("cannot write " + samplesCsv);
        }
        std::fprintf(f, "time_s,flow1_rx_bytes,flow2_rx_bytes,bottleneck_queue_pkts\n");
        const size_t width = sampler.sinks.size() + 1;
        for (uint64_t i = 0; i < sampler.samples; ++i)
        {
            std::fprintf(f, "%.3f", (i + 1) * sampler.interval.GetSeconds());
            for (size_t j = 0; j < width; ++j)
            {
                const auto v = static_cast<unsigned long long>(sampler.rows[i * width + j]);
                std::fprintf(f, ",%llu", v);
            }
            std::fprintf(f, "\n");
        }
        std::fclose(f);
    }
    Simulator::Destroy();

    // Debian's build has no version tag (ShortVersion() is a placeholder); dpkg knows it.
    std::printf("{\"build_profile\": \"%s\", ", Version::BuildProfile().c_str());
    std::printf("\"delay_ms\": %g, \"alpha\": %g, \"duration_s\": %g, \"sample_ms\": %g, ",
                delayMs,
                alpha,
                durationS,
                sampleMs);
    std::printf("\"bdp_pkts\": %.4f, \"buffer_pkts\": %u, \"socket_buffer_bytes\": %u, ",
                bdpPkts,
                bufferPkts,
                sockBuf);
    std::printf("\"flows\": [");
    for (size_t i = 0; i < flows.size(); ++i)
    {
        std::printf("%s{\"name\": \"%s\", \"cca\": \"%s\", \"goodput_mbps\": %.6f, "
                    "\"share_frac\": %.6f}",
                    i ? ", " : "",
                    flows[i].name,
                    flows[i].cca.c_str(),
                    goodput[i],
                    total > 0 ? goodput[i] / total : 0.0);
    }
    std::printf("], \"total_goodput_mbps\": %.6f, \"bottleneck_drops\": %llu, "
                "\"events\": %llu, \"samples\": %llu}\n",
                total,
                static_cast<unsigned long long>(g_forwarded - g_macTx + g_macTxDrop),
                static_cast<unsigned long long>(events),
                static_cast<unsigned long long>(sampler.samples));
    return 0;
}
