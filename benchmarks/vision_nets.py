"""ResNet-18 and MobileNetV3-small written once against PyTorch's ``nn`` API, so that the
same network runs on ember and on torch (torchvision's builders, without torchvision).

Architectures: He et al., "Deep residual learning for image recognition", 2016 (basic
blocks, [2, 2, 2, 2]); Howard et al., "Searching for MobileNetV3", 2019, table 2 (the
small network: inverted residuals with squeeze-and-excitation and hardswish).
"""

from __future__ import annotations


def resnet18(lib, num_classes: int = 1000):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


# (kernel, expanded channels, out channels, squeeze-excite, activation, stride)
_SMALL = [(3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
          (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
          (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
          (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1)]


def _divisible(v, d=8):
    r = max(d, int(v + d / 2) // d * d)
    return r + d if r < 0.9 * v else r


def mobilenet_v3_small(lib, num_classes: int = 1000):
    nn = lib.nn

    def conv_bn(cin, cout, k, stride, groups, act):
        mods = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act:
            mods.append(nn.Hardswish() if act == "HS" else nn.ReLU())
        return nn.Sequential(*mods)

    class SqueezeExcite(nn.Module):
        def __init__(self, c):
            super().__init__()
            s = _divisible(c // 4)
            self.fc1, self.fc2 = nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)
            self.relu, self.gate = nn.ReLU(), nn.Hardsigmoid()

        def forward(self, x):
            w = lib.nn.functional.adaptive_avg_pool2d(x, 1)
            return x * self.gate(self.fc2(self.relu(self.fc1(w))))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, k, exp, cout, se, act, stride):
            super().__init__()
            mods = [] if exp == cin else [conv_bn(cin, exp, 1, 1, 1, act)]
            mods.append(conv_bn(exp, exp, k, stride, exp, act))
            if se:
                mods.append(SqueezeExcite(exp))
            mods.append(conv_bn(exp, cout, 1, 1, 1, None))
            self.block = nn.Sequential(*mods)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.block(x)
            return x + y if self.residual else y

    layers = [conv_bn(3, 16, 3, 2, 1, "HS")]
    cin = 16
    for k, exp, cout, se, act, stride in _SMALL:
        layers.append(InvertedResidual(cin, k, exp, cout, se, act, stride))
        cin = cout
    layers += [conv_bn(cin, 576, 1, 1, 1, "HS"), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, num_classes)]
    return nn.Sequential(*layers)
