"""Word lists the rule-based extractor checks captured values against.

A pattern finds *where* a value sits ("I have X", 我在X工作); these lists decide what
the value *is* when the words alone are ambiguous: "I have asthma" is a health note but
"I have a cat" is a pet, 我在深圳工作 names a city but 我在腾讯工作 an employer. They
are deliberately small and general (kinds of things, suffixes), never sentences.
"""

from __future__ import annotations

from memstrata.attributes.numbers import EN_NUMBERS, ZH_DIGITS


def words(text: str) -> frozenset[str]:
    """A set of words written as one ``|``-separated string (keeps tables short)."""
    return frozenset(text.split("|"))


# --- jobs -------------------------------------------------------------------------------

JOB_WORDS = words(
    "nurse|chef|cook|clerk|pilot|student|doctor|lawyer|dentist|founder|ceo|cto|cfo|coo|pm|"
    "surgeon|pharmacist|barista|mechanic|plumber|electrician|journalist|artist|scientist|"
    "accountant|architect|analyst|consultant|engineer|developer|programmer|designer|teacher|"
    "professor|lecturer|researcher|manager|director|freelancer|intern|secretary|cashier|"
    "driver|farmer|judge|police officer|soldier|vet|veterinarian|paramedic|therapist|"
    "translator|photographer|writer|editor|librarian|tutor|salesperson|realtor|carpenter"
)
JOB_SUFFIXES = ("er", "or", "ist", "ant", "eer", "ician", "ographer", "ect")
NOT_JOBS = words(
    "fan|lover|beginner|customer|user|member|subscriber|newbie|believer|follower|parent|"
    "mother|father|owner|vegetarian|vegan|person|winner|loser|reader|gamer|foodie|smoker|"
    "runner|player|diabetic|pescatarian|insider|outsider|leftover|other|brother|sister|"
    "daughter|partner|neighbor|neighbour|stranger|traveler|traveller|worrier|sleeper|eater|"
    "drinker|lefty|nonsmoker|non-smoker|hiker|biker|skier|surfer|climber|camper|jogger|golfer|"
    "learner|thinker|dreamer|planner|talker|listener|achiever|overthinker|explorer|adventurer|"
    "introvert|extrovert|sucker|keeper|lover|hater|sleeper|early riser|night owl|cyclist|"
    "vocalist|optimist|pessimist|perfectionist|minimalist|tourist|tenant|applicant|participant"
)
# A Chinese job title ends in one of these (程序员, 设计师, 护士, 产品经理 ...).
CN_JOB_SUFFIXES = (
    "师",
    "员",
    "生",
    "家",
    "长",
    "手",
    "工",
    "官",
    "匠",
    "经理",
    "总监",
    "主管",
    "老板",
    "护士",
    "会计",
    "司机",
    "编辑",
    "记者",
    "警察",
    "教授",
    "老师",
    "律师",
    "CEO",
    "CTO",
    "CFO",
    "COO",
    "创始人",
    "合伙人",
    "顾问",
    "秘书",
    "助理",
    "店主",
    "博主",
    "主播",
    "演员",
    "模特",
)
CN_NOT_JOBS = words("学生家长|一家|大家|专家型|人家|自家|老家")

# --- places and organizations -------------------------------------------------------------

CN_PLACE_SUFFIXES = ("市", "省", "区", "县", "镇", "乡", "村", "州", "岛")
CN_ORG_SUFFIXES = (
    "公司",
    "集团",
    "银行",
    "医院",
    "诊所",
    "学校",
    "中学",
    "小学",
    "大学",
    "学院",
    "研究所",
    "研究院",
    "政府",
    "局",
    "科技",
    "网络",
    "工作室",
    "事务所",
    "律所",
    "工厂",
    "厂",
    "酒店",
    "餐厅",
    "超市",
    "中心",
    "协会",
    "基金会",
    "报社",
    "电视台",
    "出版社",
    "幼儿园",
    "部门",
    "创业公司",
    "外企",
    "国企",
    "央企",
)
CN_ORGS = words(
    "腾讯|阿里|阿里巴巴|华为|字节|字节跳动|百度|美团|京东|网易|小米|滴滴|拼多多|快手|德勤|"
    "普华永道|安永|毕马威|微软|谷歌|苹果|亚马逊|联想|中兴|比亚迪|蔚来|携程|顺丰|清华|北大|"
    "复旦|浙大|交大|中科院|特斯拉|三星|索尼|英特尔|招行|工行|建行|农行|中行|银行"
)
# Words that stand where a workplace would but name none.
CN_NOT_WORKPLACES = words(
    "家|家里|老家|本地|外地|这里|那里|这边|那边|这儿|那儿|附近|市区|郊区|一起|公司|单位|"
    "学校|医院|网上|线上|线下|楼下|楼上|隔壁|里面|外面"
)

# --- names ------------------------------------------------------------------------------

# Capitalized words that follow "I'm" without being a name ("I'm Canadian").
NOT_NAMES = words(
    "american|british|chinese|canadian|english|french|german|japanese|korean|indian|italian|"
    "spanish|mexican|australian|russian|brazilian|dutch|swedish|irish|scottish|welsh|asian|"
    "european|african|christian|muslim|jewish|buddhist|catholic|hindu|ok|okay|fine|good|"
    "sorry|sure|back|here|done|ready|busy|free|home|vegan|vegetarian|single|married|"
    "divorced|irrelevant|unimportant|secret|private|long|hard|monday|tuesday|wednesday|"
    "thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
    "september|october|november|december|today|tomorrow|tonight|anytime|later|soon|"
    "not|no|never|also|just|really|still|so|very|too|the|a|an|in|at|on|from|with|by|"
    "about|allergic|pregnant|diabetic|lactose|gluten|new|old|happy|tired|excited|glad|"
    "interested|into|based|originally|currently|now|actually|going|looking|thinking|"
    "retired|unemployed|self-employed|employed|alone|available|afraid|aware"
)
# The hundred most common Chinese surnames, and the familiar prefixes of given names:
# 我妻子是李华 names her, 我妻子是老师 does not.
CN_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
    "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
    "毛郝龚邵万钱严覃武戴莫孔向汤小阿老"
)
CN_NOT_NAMES = words("什么|谁|这个|那个|一下|自己|我|你|他|她|它")

# --- health -----------------------------------------------------------------------------

CONDITIONS = words(
    "diabetes|asthma|arthritis|hypertension|high blood pressure|low blood pressure|"
    "high cholesterol|migraine|migraines|insomnia|depression|anxiety|adhd|add|autism|"
    "epilepsy|cancer|celiac disease|coeliac disease|eczema|psoriasis|heart disease|"
    "heart condition|back pain|bad back|bad knee|bad knees|bad hip|gout|anemia|anaemia|ibs|"
    "crohn's|crohn's disease|sleep apnea|tinnitus|dyslexia|lupus|ptsd|ocd|scoliosis|"
    "glaucoma|hay fever|acid reflux|reflux|chronic pain|fibromyalgia|a heart murmur|"
    "heart murmur|kidney stones|kidney disease|thyroid issues|hypothyroidism|hyperthyroidism"
)
CONDITION_SUFFIXES = (
    "itis",
    "osis",
    "emia",
    "algia",
    "pathy",
    "disease",
    "disorder",
    "syndrome",
    "diabetes",
    "cancer",
    "pressure",
    "cholesterol",
    "pain",
    "injury",
    "condition",
    "migraines",
)
BODY_PARTS = words("knee|knees|back|hip|hips|shoulder|ankle|wrist|heart|neck|elbow|foot|feet")
BODY_PART_STATES = words("bad|weak|injured|broken|sore|torn|dodgy|bum|trick|fused|replaced")
HEALTH_STATES = words(
    "pregnant|diabetic|prediabetic|pre-diabetic|asthmatic|epileptic|anemic|anaemic|"
    "colorblind|color-blind|colourblind|deaf|blind|hard of hearing|immunocompromised|"
    "hypoglycemic|autistic|dyslexic|nearsighted|short-sighted|farsighted"
)
DIETS = words(
    "vegetarian|vegan|pescatarian|pescetarian|flexitarian|keto|paleo|halal|kosher|"
    "gluten-free|gluten free|dairy-free|dairy free|low-carb|low carb|plant-based|raw vegan|"
    "lacto-vegetarian|ovo-vegetarian|carnivore|sugar-free|sugar free|low-fat|low fat"
)
# Languages by name, English and Chinese (regex alternations): what the user speaks
# (sets.py), the reply language (everyday_patterns.py) and its value check (values.py).
LANGUAGES_EN = (
    r"English|Chinese|Mandarin|Cantonese|French|Spanish|German|Japanese|Korean|Italian|"
    r"Portuguese|Russian|Arabic|Dutch|Hindi|Vietnamese|Thai|Swedish|Polish|Turkish|Greek"
)
LANGUAGES_CN = (
    r"中文|汉语|普通话|粤语|英文|英语|日语|日文|韩语|韩文|法语|法文|德语|德文|西班牙语|俄语|"
    r"意大利语|葡萄牙语|阿拉伯语|泰语|越南语"
)

# Foods and drinks by kind: what "I can't have X" or 我不能吃X may name (the avoids and
# allergies value type, food). Kinds, not dishes: a dish ends in one of the suffixes.
FOODS = words(
    "dairy|milk|cheese|butter|cream|yogurt|yoghurt|lactose|egg|eggs|gluten|wheat|bread|pasta|"
    "nut|nuts|peanut|peanuts|tree nuts|almond|almonds|walnut|walnuts|cashew|cashews|soy|soya|"
    "tofu|shellfish|shrimp|prawn|prawns|crab|lobster|seafood|fish|salmon|tuna|meat|red meat|"
    "pork|beef|lamb|mutton|chicken|turkey|bacon|ham|sugar|sweets|candy|chocolate|alcohol|"
    "beer|wine|liquor|coffee|caffeine|tea|soda|spicy food|spicy foods|garlic|onion|onions|"
    "mushroom|mushrooms|sesame|corn|rice|carbs|fried food|junk food|fast food|msg|mango|"
    "mangoes|strawberries|kiwi|citrus|tomato|tomatoes|celery|mustard|sulfites|caffeinated drinks|"
    "raw fish|sushi|cilantro|coriander|pineapple|avocado|oats|barley|rye|honey|gelatin"
)
CN_FOOD_SUFFIXES = (
    "肉",
    "菜",
    "奶",
    "蛋",
    "虾",
    "鱼",
    "蟹",
    "糖",
    "酒",
    "茶",
    "咖啡",
    "面",
    "米",
    "果",
    "豆",
    "辣",
    "椒",
    "姜",
    "葱",
    "蒜",
    "海鲜",
    "制品",
    "食品",
    "食物",
    "饮料",
    "奶茶",
    "甜食",
    "坚果",
    "麸质",
    "花生",
    "芒果",
)

# Chinese conditions that stand as a predicate on their own (我经常偏头痛, 我怀孕了);
# the rest are found by their endings (糖尿病, 高血压, 鼻炎, 胃癌 ...).
CN_CONDITION_STATES = words(
    "偏头痛|头痛|头疼|失眠|胃痛|胃疼|腰疼|腰痛|哮喘|抑郁|焦虑|便秘|贫血|近视|怀孕|痛风|低血糖"
)
CN_CONDITION_SUFFIXES = ("病", "症", "炎", "癌", "痛", "疼", "喘", "压", "血", "脂", "风", "疮")

# --- family -----------------------------------------------------------------------------

ANIMALS = words(
    "cat|dog|puppy|kitten|parrot|hamster|rabbit|bunny|goldfish|fish|turtle|tortoise|snake|"
    "lizard|gecko|guinea pig|ferret|horse|pony|bird|budgie|canary|retriever|labrador|poodle|"
    "bulldog|beagle|corgi|husky|terrier|shepherd|dachshund|chihuahua|spaniel|pug|collie|"
    "schnauzer|greyhound|boxer|rottweiler|doberman|tabby|siamese|persian|maine coon"
)
CN_ANIMALS = words(
    "猫|狗|猫咪|狗狗|小猫|小狗|金毛|泰迪|柯基|哈士奇|柴犬|拉布拉多|边牧|博美|比熊|萨摩耶|"
    "布偶|布偶猫|英短|美短|橘猫|兔子|仓鼠|鹦鹉|乌龟|鱼|金鱼|龙猫|刺猬|蜥蜴"
)
# Counts in words (read by :mod:`memstrata.attributes.numbers`, the one reader of numerals).
NUMBER_WORDS: dict[str, int] = {
    **EN_NUMBERS,
    **{char: value for char, value in ZH_DIGITS.items() if value and char != "〇"},
    "十": 10,
}
